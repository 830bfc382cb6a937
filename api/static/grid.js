// The grid's details panel and keyboard. A click on a task instance's cell (without a modifier
// key: those still open its page) shows its details beside the grid, fetched from the cell's
// link + "/partials/panel", without leaving the page. The arrow keys move the selected cell
// across the visible rows, Enter opens its details, Escape closes them. The selection (row and
// column) and an open panel survive the grid's refresh every few seconds.
(function () {
  "use strict";
  var panel = document.getElementById("grid-panel");
  var box = document.getElementById("grid");
  if (!panel || !box) return;
  var selected = null;  // {row: row id, column: index of the cell in its row}
  var openHref = null;

  function rows() {
    return Array.prototype.filter.call(box.querySelectorAll("table.grid tbody tr"), function (row) {
      return !row.classList.contains("hidden-row");
    });
  }
  function cellAt(row, column) {
    var cells = row.querySelectorAll("td");
    if (!cells.length) return null;
    return cells[Math.max(0, Math.min(column, cells.length - 1))];
  }
  function target(cell) {  // what takes the focus: the cell's link, or a group's or blank mark
    var inner = cell.firstElementChild;
    if (inner && !inner.matches("a[href]")) inner.setAttribute("tabindex", "-1");
    return inner;
  }
  function select(cell, focus) {
    box.querySelectorAll(".cell.selected").forEach(function (c) { c.classList.remove("selected"); });
    var row = cell.closest("tr");
    selected = { row: row.dataset.rowId, column: Array.prototype.indexOf.call(row.children, cell) - 1 };
    var inner = target(cell);
    if (!inner) return;
    inner.classList.add("selected");
    if (focus) inner.focus();
  }
  function move(event) {
    var cell = event.target.closest("table.grid td");
    if (!cell) return;
    var list = rows();
    var at = list.indexOf(cell.closest("tr"));
    var column = Array.prototype.indexOf.call(cell.parentNode.children, cell) - 1;
    var steps = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    var step = steps[event.key];
    var row = list[Math.max(0, Math.min(at + step[0], list.length - 1))];
    var next = row && cellAt(row, Math.max(0, column + step[1]));
    if (next) select(next, true);
    event.preventDefault();
  }

  function show(href) {
    openHref = href;
    var url = href.split("?")[0] + "/partials/panel" + (href.indexOf("?") >= 0 ? "?" + href.split("?")[1] : "");
    return fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (reply) { return reply.ok ? reply.text() : null; })
      .then(function (html) {
        if (html === null || openHref !== href) return;
        panel.innerHTML = html;
        panel.hidden = false;
        box.parentNode.classList.add("with-panel");
      });
  }
  function close() {
    openHref = null;
    panel.hidden = true;
    panel.replaceChildren();
    box.parentNode.classList.remove("with-panel");
    var back = box.querySelector(".cell.selected");
    if (back) back.focus();
  }

  box.addEventListener("click", function (event) {
    var link = event.target.closest("a.cell");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    select(link.closest("td"), true);
    show(link.getAttribute("href")).then(function () { panel.focus(); });
  });
  box.addEventListener("keydown", function (event) {
    if (event.key.indexOf("Arrow") === 0) move(event);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) close();
  });
  panel.addEventListener("click", function (event) {
    if (event.target.closest("[data-panel-close]")) close();
  });
  document.addEventListener("tradewind:refreshed", function (event) {
    if (event.target !== box || selected === null) return;
    var focused = document.activeElement === document.body || box.contains(document.activeElement);
    var row = box.querySelector('tr[data-row-id="' + CSS.escape(selected.row) + '"]');
    var cell = row && cellAt(row, selected.column);
    if (cell) select(cell, focused && panel.hidden);
    if (openHref) show(openHref);  // the details follow the task instance too
  });
})();
