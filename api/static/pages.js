// The task page's live log. It opens on the log's tail ("Earlier lines" pages back), a running
// try's log is followed from the last byte read and scrolled along if the reader is at its end.
// The tab never holds a whole large log: a follower far behind jumps to the tail (the server
// says so with the window's start), and a long follow keeps only the last data-window bytes.
// (The run's task table refreshes through tradewind.js's data-refresh.)
(function () {
  "use strict";
  var PERIOD_MS = 2000;

  function get(pre, query) {
    return fetch(pre.dataset.tail + query, { credentials: "same-origin" })
      .then(function (reply) { return reply.ok ? reply.json() : null; });
  }

  // Each window read is a span that knows its first byte: trimming and paging back need it.
  // Inside it, a span for each run of lines of one level, classed by it (the server parses).
  function piece(chunk) {
    var span = document.createElement("span");
    span.dataset.start = chunk.start;
    var lines = chunk.text.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    var levels = chunk.levels || [];
    var run = [];
    lines.forEach(function (text, index) {
      var level = levels[index] || "info";
      if (run.length && run[0] !== level) {
        span.appendChild(levelRun(run));
        run = [];
      }
      if (!run.length) run.push(level);
      run.push(text + "\n");
    });
    if (run.length) span.appendChild(levelRun(run));
    return span;
  }

  function levelRun(run) {  // [level, line, line, ...]
    var element = document.createElement("span");
    element.className = "ll ll-" + run[0];
    element.textContent = run.slice(1).join("");
    return element;
  }

  // The reader's choices for every log: the lowest level shown, and whether lines wrap.
  var RANKS = { debug: 0, info: 1, warning: 2, error: 3, critical: 4 };
  function remembered(name, fallback) {
    try { return localStorage.getItem("tradewind:log-" + name) || fallback; }
    catch (error) { return fallback; }
  }
  function remember(name, value) {
    try { localStorage.setItem("tradewind:log-" + name, value); } catch (error) { /* private */ }
  }
  function countHidden(pre) {
    var note = document.getElementById("pg-log-hidden");
    if (!note) return;
    var floor = RANKS[pre.dataset.minLevel] || 0;
    var hidden = 0;
    if (floor) {
      pre.querySelectorAll(".ll").forEach(function (line) {
        var level = line.className.slice(6);
        if ((RANKS[level] === undefined ? 1 : RANKS[level]) < floor) {
          hidden += line.textContent.split("\n").length - 1;
        }
      });
    }
    note.hidden = hidden === 0;
    note.textContent = hidden + (hidden === 1 ? " line" : " lines") + " hidden by the filter";
  }
  function startTools(pre) {
    var level = document.getElementById("pg-log-level");
    var wrap = document.getElementById("pg-log-wrap");
    if (level) {
      level.value = remembered("level", "debug");
      pre.dataset.minLevel = level.value;
      level.addEventListener("change", function () {
        pre.dataset.minLevel = level.value;
        remember("level", level.value);
        countHidden(pre);
      });
    }
    if (wrap) {
      wrap.checked = remembered("wrap", "yes") === "yes";
      pre.classList.toggle("pg-log-nowrap", !wrap.checked);
      wrap.addEventListener("change", function () {
        pre.classList.toggle("pg-log-nowrap", !wrap.checked);
        remember("wrap", wrap.checked ? "yes" : "no");
      });
    }
    countHidden(pre);
  }

  function showEarlier(pre) {
    var button = document.getElementById("pg-log-earlier");
    if (button) button.hidden = Number(pre.dataset.start) === 0;
  }

  function trim(pre) {
    var keep = Number(pre.dataset.window);
    while (pre.children.length > 1 &&
           Number(pre.dataset.offset) - Number(pre.children[0].dataset.start) > keep) {
      pre.removeChild(pre.children[0]);
    }
    if (pre.children.length) pre.dataset.start = pre.children[0].dataset.start;
  }

  function followLog(pre) {
    if (!pre.isConnected) return;  // replaced by a newer try's log: that one is followed
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    get(pre, "&offset=" + pre.dataset.offset).then(function (chunk) {
      if (chunk === null) return;
      if (chunk.start !== Number(pre.dataset.offset)) {
        pre.replaceChildren();  // far behind: the server answered with the tail instead
        pre.dataset.start = chunk.start;
      }
      if (chunk.text) pre.appendChild(piece(chunk));
      countHidden(pre);
      var more = chunk.offset !== Number(pre.dataset.offset);
      pre.dataset.offset = chunk.offset;
      if (atEnd) {
        trim(pre);  // only at the end: a reader scrolled up keeps what they read
        pre.scrollTop = pre.scrollHeight;
      }
      showEarlier(pre);
      if (more) followLog(pre);
      else if (chunk.live) setTimeout(function () { followLog(pre); }, PERIOD_MS);
    });
  }

  function pageBack(pre, button) {
    button.disabled = true;
    get(pre, "&before=" + pre.dataset.start).then(function (chunk) {
      button.disabled = false;
      if (chunk === null) return;
      var height = pre.scrollHeight;
      pre.insertBefore(piece(chunk), pre.firstChild);
      pre.dataset.start = chunk.start;
      pre.scrollTop += pre.scrollHeight - height;  // the reader stays on the line they read
      showEarlier(pre);
      countHidden(pre);
    });
  }

  function startLog() {
    var log = document.getElementById("pg-log");
    if (!log) return;
    startTools(log);
    log.scrollTop = log.scrollHeight;
    followLog(log);  // while the try runs, what it adds
    var earlier = document.getElementById("pg-log-earlier");
    if (earlier) earlier.addEventListener("click", function () { pageBack(log, earlier); });
  }

  // The task page follows its task instance: when the live part (refreshed by tradewind.js)
  // names another try or state than the part below it shows, that part is fetched again, so
  // a new try's log, items and XComs appear without a reload. A try the reader chose stays.
  function followTask(event) {
    var body = document.getElementById("pg-task-body");
    if (!body || !body.dataset.body || body.dataset.pinned === "yes") return;
    var head = event.target.querySelector("[data-version]");
    if (!head || head.dataset.version === body.dataset.version) return;
    var version = head.dataset.version;
    body.dataset.version = version;
    fetch(body.dataset.body, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (reply) { return reply.ok ? reply.text() : null; })
      .then(function (html) {
        if (html === null) { body.dataset.version = ""; return; }  // asked again next time
        body.innerHTML = html;
        startLog();
      });
  }

  startLog();
  document.addEventListener("tradewind:refreshed", followTask);
})();
