// The session page of a live run: polls its progress endpoint and, when a
// step is recorded or the status changes, replaces the page's content with a
// freshly rendered copy (no reload). Stops once the run has ended.
(function () {
  "use strict";
  var INTERVAL = 2000;

  function root() {
    return document.getElementById("session");
  }

  function refresh() {
    return fetch(window.location.href, {
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        var fresh = page.getElementById("session");
        var current = root();
        if (fresh && current) {
          current.replaceWith(document.adoptNode(fresh));
          document.title = page.title;
        }
        return fresh;
      });
  }

  function poll() {
    var current = root();
    var url = current && current.dataset.liveUrl;
    if (!url) return; // finished: nothing more to watch
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (progress) {
        if (progress.version !== current.dataset.liveVersion) return refresh();
        return null;
      })
      .catch(function () {
        /* a missed poll is retried on the next tick */
      })
      .then(function () {
        window.setTimeout(poll, INTERVAL);
      });
  }

  window.setTimeout(poll, INTERVAL);
})();
