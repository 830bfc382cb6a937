// Tradewind's pages: the one script. An element with data-refresh="URL" has its content
// replaced by the HTML of URL every data-every seconds (5 by default), so a live part of a
// page (a grid, a list of states) follows the store without reloading the page.
(function () {
  "use strict";
  function follow(element) {
    const every = 1000 * Number(element.dataset.every || 5);
    async function refresh() {
      if (!document.hidden) {
        try {
          const reply = await fetch(element.dataset.refresh, { headers: { Accept: "text/html" } });
          if (reply.ok) {
            element.innerHTML = await reply.text();
            element.dispatchEvent(new CustomEvent("tradewind:refreshed", { bubbles: true }));
          }
        } catch (error) {
          // The server is away for a moment: keep what is shown, try again later.
        }
      }
      setTimeout(refresh, every);
    }
    setTimeout(refresh, every);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-refresh]").forEach(follow);
  });
})();

// The grid's task groups fold: a group's button hides the rows under it. What is folded is
// kept per DAG in sessionStorage and applied again after each refresh of the grid.
(function () {
  "use strict";
  function key(grid) { return "tradewind:folded:" + grid.dataset.dagId; }
  function folded(grid) {
    try { return new Set(JSON.parse(sessionStorage.getItem(key(grid)) || "[]")); }
    catch (error) { return new Set(); }
  }
  function apply(grid) {
    const closed = folded(grid);
    grid.querySelectorAll("tbody tr").forEach(function (row) {
      const parents = (row.dataset.parents || "").split(" ").filter(Boolean);
      row.classList.toggle("hidden-row", parents.some(function (p) { return closed.has(p); }));
    });
    grid.querySelectorAll("button.group-toggle").forEach(function (button) {
      const open = !closed.has(button.dataset.group);
      button.setAttribute("aria-expanded", String(open));
      button.textContent = open ? "▾" : "▸";
    });
  }
  function applyAll() { document.querySelectorAll("table.grid").forEach(apply); }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.group-toggle");
    if (!button) return;
    const grid = button.closest("table.grid");
    const closed = folded(grid);
    if (closed.has(button.dataset.group)) closed.delete(button.dataset.group);
    else closed.add(button.dataset.group);
    sessionStorage.setItem(key(grid), JSON.stringify(Array.from(closed)));
    apply(grid);
  });
  document.addEventListener("DOMContentLoaded", applyAll);
  document.addEventListener("tradewind:refreshed", applyAll);
})();

// A form with data-confirm="question" is sent only once the question is answered OK (the
// pages' Content-Security-Policy runs no inline handler, so this is where it is asked).
document.addEventListener("submit", function (event) {
  "use strict";
  const question = event.target.dataset ? event.target.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});

// A browse's filter form (form.filters, sent by GET) leaves its empty fields out of the URL, so
// a filtered list's link names only the filters it has.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    const form = event.target;
    if (!form.matches || !form.matches("form.filters")) { return; }
    form.querySelectorAll("input, select").forEach(function (field) {
      if (field.name && !field.multiple && field.value === "") { field.disabled = true; }
    });
  });
  // Back to a page whose fields were disabled on leaving (the browser's cache): enable them.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form.filters [disabled]").forEach(function (field) {
      field.disabled = false;
    });
  });
})();
