// The task page's live log: a running try's log is followed from the last byte read, and
// scrolled along if the reader is at its end. (The run's task table refreshes through
// tradewind.js's data-refresh.)
(function () {
  "use strict";
  var PERIOD_MS = 2000;

  function followLog(pre) {
    var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
    var url = pre.dataset.tail + "&offset=" + pre.dataset.offset;
    fetch(url, { credentials: "same-origin" })
      .then(function (reply) { return reply.ok ? reply.json() : null; })
      .then(function (chunk) {
        if (chunk === null) return;
        if (chunk.text) {
          pre.appendChild(document.createTextNode(chunk.text));
          if (atEnd) pre.scrollTop = pre.scrollHeight;
        }
        var more = chunk.offset !== Number(pre.dataset.offset);
        pre.dataset.offset = chunk.offset;
        pre.dataset.live = chunk.live ? "yes" : "no";
        if (more) followLog(pre);
        else if (chunk.live) setTimeout(function () { followLog(pre); }, PERIOD_MS);
      });
  }

  var log = document.getElementById("pg-log");
  if (log) {
    log.scrollTop = log.scrollHeight;
    followLog(log);  // the rest of a long log, then (while the try runs) what it adds
  }
})();
