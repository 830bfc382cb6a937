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
