"use strict";
// Hosted tool admin form: show only the settings of the chosen kind. Without
// JavaScript every section stays visible (the form ignores the other kinds').
document.addEventListener("DOMContentLoaded", () => {
  const kind = document.getElementById("id_kind");
  if (!kind) {
    return;
  }
  const sections = document.querySelectorAll("fieldset.hosted-kind");
  const show = () => {
    for (const section of sections) {
      section.hidden = !section.classList.contains(`kind-${kind.value}`);
    }
  };
  kind.addEventListener("change", show);
  show();
});
