// The DAG page's graph: zoom (buttons, and ctrl + wheel), and the run selector submitting itself.
// The SVG keeps its own coordinates; zooming changes only the size it is drawn at.
(function () {
  "use strict";
  var svg = document.querySelector("svg.graph");
  var zoom = document.querySelector(".graph-tools .zoom");
  var scale = 1;

  function apply() {
    svg.setAttribute("width", Math.round(Number(svg.dataset.width) * scale));
    svg.setAttribute("height", Math.round(Number(svg.dataset.height) * scale));
  }

  function fit() {
    var room = svg.parentElement.clientWidth - 4;
    scale = Math.min(1, room / Number(svg.dataset.width));
    apply();
  }

  if (svg && zoom) {
    zoom.hidden = false;
    zoom.addEventListener("click", function (event) {
      var which = event.target.dataset.zoom;
      if (which === "in") scale = Math.min(scale * 1.25, 4);
      else if (which === "out") scale = Math.max(scale / 1.25, 0.1);
      else if (which === "fit") return fit();
      else return;
      apply();
    });
    svg.parentElement.addEventListener("wheel", function (event) {
      if (!event.ctrlKey) return;  // a plain wheel scrolls
      event.preventDefault();
      scale = event.deltaY < 0 ? Math.min(scale * 1.1, 4) : Math.max(scale / 1.1, 0.1);
      apply();
    }, { passive: false });
  }
  document.querySelectorAll("select.auto-submit").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
