"use strict";
// Rows editors (a policy's rules, dependencies and limits; a tool's examples):
// "Add a row" copies the editor's row template with the next free index.
// Without JavaScript the blank rows the page brings are there to fill, and a
// row is dropped by ticking its Remove box.
document.addEventListener("DOMContentLoaded", () => {
  for (const editor of document.querySelectorAll(".rows-editor")) {
    const button = editor.querySelector(".rows-editor-add");
    const template = editor.querySelector("template.rows-editor-template");
    const body = editor.querySelector(".rows-editor-rows");
    if (!button || !template || !body) {
      continue;
    }
    button.hidden = false;
    button.addEventListener("click", () => {
      const index = String(Number(editor.dataset.next));
      editor.dataset.next = String(Number(index) + 1);
      const row = template.content.firstElementChild.cloneNode(true);
      for (const element of row.querySelectorAll("[name], [id], [for]")) {
        for (const attribute of ["name", "id", "for"]) {
          const value = element.getAttribute(attribute);
          if (value) {
            element.setAttribute(attribute, value.replaceAll("__index__", index));
          }
        }
      }
      const number = row.querySelector(".rows-editor-number");
      if (number) {
        number.textContent = String(body.children.length + 1);
      }
      body.appendChild(row);
      const first = row.querySelector("input, select, textarea");
      if (first) {
        first.focus();
      }
    });
  }
});
