"use strict";
// Policy admin form: show the fields of the chosen kind, or the JSON, as
// "Edit the configuration" says. Without JavaScript every section stays
// visible, labelled (the form reads only the chosen kind's fields, or the JSON).
document.addEventListener("DOMContentLoaded", () => {
  const kind = document.getElementById("id_kind");
  if (!kind) {
    return;
  }
  const sources = document.querySelectorAll('input[name="config_source"]');
  const kinds = document.querySelectorAll("fieldset.policy-kind");
  const json = document.querySelectorAll("fieldset.policy-json");
  const show = () => {
    const checked = document.querySelector('input[name="config_source"]:checked');
    const source = checked ? checked.value : "fields";
    for (const section of kinds) {
      section.hidden =
        source !== "fields" || !section.classList.contains(`kind-${kind.value}`);
    }
    for (const section of json) {
      section.hidden = source !== "json";
    }
  };
  kind.addEventListener("change", show);
  for (const source of sources) {
    source.addEventListener("change", show);
  }
  show();
});
