// Clear and Mark, confirmed (api/pages/recover.py). A [data-recover] button opens the dialog
// (templates/recover/dialog.html) with what it acts on; the dialog asks the server for the list
// of task instances that would change (…/recover/preview) and asks again whenever a scope box
// is ticked, so what is confirmed is what the server will do. Bulk bars
// (templates/recover/bulk_actions.html) act on the rows picked in a list; the picks are kept
// across the list's refresh (tradewind.js replaces its HTML every few seconds).
(function () {
  "use strict";
  var dialog = document.getElementById("rc-dialog");
  if (!dialog) return;
  var form = document.getElementById("rc-form");
  var list = document.getElementById("rc-list");
  var confirmButton = document.getElementById("rc-confirm");
  var picked = {};  // list id -> Set of picked values
  var asked = 0;    // the latest preview asked: an earlier answer arriving late is dropped

  function field(name) { return form.querySelector("input[name=" + name + "]"); }

  function picksOf(listId) {
    if (!picked[listId]) picked[listId] = new Set();
    return picked[listId];
  }

  // Which scope boxes apply: tasks' relatives and other runs for a task, a group or picked
  // task instances; only failed / only running for any clear.
  function showScopes(action, kind) {
    form.querySelectorAll("#rc-scope label").forEach(function (label) {
      var applies = label.dataset.scope === "tasks" ? kind !== "runs" : action === "clear";
      label.hidden = !applies;
      var box = label.querySelector("input");
      box.disabled = !applies;
      box.checked = applies && box.name === "downstream" && action === "clear";
    });
    document.getElementById("rc-scope").hidden = !form.querySelector("#rc-scope label:not([hidden])");
  }

  function title(button) {
    var action = button.dataset.recover;
    var verb = action === "clear" ? "Clear" : "Mark " + button.dataset.state;
    var what = button.dataset.label || "";
    if (button.dataset.picks) {
      var count = picksOf(button.dataset.picks).size;
      what = count + " selected " + (button.dataset.kind === "runs" ? "run" : "task instance") +
        (count === 1 ? "" : "s");
    }
    document.getElementById("rc-title").textContent = verb + ": " + what;
    confirmButton.textContent = verb;
    confirmButton.className = "pg-btn " + (button.dataset.state === "failed" ? "pg-bad" : "pg-ok");
  }

  function open(button) {
    var data = button.dataset;
    // setAttribute: form.action is the hidden input named "action", not the form's URL.
    form.setAttribute("action", "/dags/" + encodeURIComponent(data.dagId) + "/recover");
    field("action").value = data.recover;
    field("kind").value = data.kind;
    field("state").value = data.state || "";
    field("run_id").value = data.runId || "";
    field("task_id").value = data.taskId || "";
    field("map_index").value = data.mapIndex || "-1";
    field("group_id").value = data.groupId || "";
    field("next").value = window.location.pathname + window.location.search;
    var holder = document.getElementById("rc-picks");
    holder.replaceChildren();
    if (data.picks) {
      picksOf(data.picks).forEach(function (value) {
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = "pick";
        input.value = value;
        holder.appendChild(input);
      });
    }
    showScopes(data.recover, data.kind);
    title(button);
    dialog.showModal();
    preview();
  }

  function preview() {
    var mine = ++asked;
    confirmButton.disabled = true;
    list.textContent = "Listing what would change…";
    fetch(form.getAttribute("action") + "/preview", {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    }).then(function (reply) {
      return reply.text().then(function (html) { return { ok: reply.ok, html: html }; });
    }).then(function (answer) {
      if (mine !== asked) return;
      list.innerHTML = answer.html;
      var count = list.querySelector(".rc-count");
      confirmButton.disabled = !answer.ok || !count || count.dataset.changes === "0";
    }).catch(function () {
      if (mine === asked) list.textContent = "The server did not answer: try again.";
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-recover]");
    if (!button) return;
    event.preventDefault();
    open(button);
  });
  document.getElementById("rc-cancel").addEventListener("click", function () { dialog.close(); });
  form.addEventListener("change", function (event) {
    if (event.target.closest("#rc-scope")) preview();
  });
  form.addEventListener("submit", function () { confirmButton.disabled = true; });

  // Bulk picks: a row's box, the list's "all" box, the bar's count and buttons.
  function listOf(element) {
    var bar = element.closest("[id]");
    while (bar && !document.querySelector(".rc-bulk[data-list='" + bar.id + "']")) {
      bar = bar.parentElement ? bar.parentElement.closest("[id]") : null;
    }
    return bar;
  }

  function showPicks(listElement) {
    var picks = picksOf(listElement.id);
    var boxes = listElement.querySelectorAll("input.rc-pick");
    boxes.forEach(function (box) { box.checked = picks.has(box.value); });
    listElement.querySelectorAll("input.rc-pick-all").forEach(function (all) {
      all.checked = boxes.length > 0 && Array.prototype.every.call(boxes, function (b) { return b.checked; });
    });
    document.querySelectorAll(".rc-picked[data-list='" + listElement.id + "']").forEach(function (label) {
      label.textContent = picks.size ? picks.size + " selected" : "None selected";
    });
    document.querySelectorAll(".rc-bulk[data-list='" + listElement.id + "'] button").forEach(function (b) {
      b.disabled = picks.size === 0;
    });
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches("input.rc-pick, input.rc-pick-all")) return;
    var listElement = listOf(box);
    if (!listElement) return;
    var picks = picksOf(listElement.id);
    var boxes = box.matches(".rc-pick-all") ? listElement.querySelectorAll("input.rc-pick") : [box];
    boxes.forEach(function (one) {
      if (box.checked) picks.add(one.value); else picks.delete(one.value);
    });
    showPicks(listElement);
  });

  document.addEventListener("tradewind:refreshed", function (event) {
    var listElement = event.target.id ? event.target : listOf(event.target);
    if (listElement && document.querySelector(".rc-bulk[data-list='" + listElement.id + "']")) {
      showPicks(listElement);
    }
  });
})();
