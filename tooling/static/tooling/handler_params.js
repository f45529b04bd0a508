"use strict";
// Function tool admin form: show the parameters of the handler picked in the
// handler select, and the description boxes of its parameters. Without
// JavaScript the saved handler's stay shown.
document.addEventListener("DOMContentLoaded", () => {
  const handler = document.getElementById("id_handler_key");
  if (!handler) {
    return;
  }
  const panels = document.querySelectorAll(
    ".handler-params[data-handler], .param-overrides[data-handler]",
  );
  const show = () => {
    for (const panel of panels) {
      panel.hidden = panel.dataset.handler !== handler.value;
    }
  };
  handler.addEventListener("change", show);
  show();
});
