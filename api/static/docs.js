// The /docs page: Swagger UI on the server's own OpenAPI document (an inline script would be
// refused by the pages' Content-Security-Policy, so it starts from this file).
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.SwaggerUIBundle({
    url: root.dataset.openapi,
    domNode: root,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
  });
})();
