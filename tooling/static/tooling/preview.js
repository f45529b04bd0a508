// The preview page's Copy button: copies the request body it names. Without
// JavaScript the button stays hidden and the body is selectable as text.
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button.copy-button[data-copy]")) {
    const target = document.getElementById(button.dataset.copy);
    if (!target || !navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(target.textContent);
        button.textContent = "Copied";
      } catch (error) {
        button.textContent = "Copy failed: select the text";
      }
    });
  }
});
