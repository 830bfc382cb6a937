// The pages' colour scheme, set before the page is drawn (this script is not deferred, so no
// light flash on a dark screen): the reader's choice kept in localStorage, else the system's
// (prefers-color-scheme, followed while it changes). The header's button switches it.
(function () {
  "use strict";
  var KEY = "tradewind:theme";
  var root = document.documentElement;
  var system = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function chosen() {
    try { return localStorage.getItem(KEY); } catch (error) { return null; }
  }
  function apply() {
    var theme = chosen() || (system && system.matches ? "dark" : "light");
    root.dataset.theme = theme;
    var button = document.getElementById("theme-toggle");
    if (button) {
      button.setAttribute("aria-pressed", String(theme === "dark"));
      button.textContent = theme === "dark" ? "☀" : "☾";
      button.title = "Switch to the " + (theme === "dark" ? "light" : "dark") + " colours";
      button.setAttribute("aria-label", button.title);
    }
  }
  apply();
  if (system && system.addEventListener) system.addEventListener("change", apply);
  document.addEventListener("DOMContentLoaded", function () {
    apply();
    var button = document.getElementById("theme-toggle");
    if (button) button.addEventListener("click", function () {
      var next = root.dataset.theme === "dark" ? "light" : "dark";
      try { localStorage.setItem(KEY, next); } catch (error) { /* private window: this page only */ }
      apply();
      if (!chosen()) root.dataset.theme = next;
    });
    // The narrow screens' menu: the nav folds under one button (theme.css).
    var menu = document.getElementById("nav-toggle");
    if (menu) menu.addEventListener("click", function () {
      var top = menu.closest("header.top");
      var open = !top.classList.contains("nav-open");
      top.classList.toggle("nav-open", open);
      menu.setAttribute("aria-expanded", String(open));
    });
  });
})();
