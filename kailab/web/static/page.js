// kailab's pages: the regions the server renders (escaped by Jinja2) arrive as server-sent events and replace
// what is shown; a click on a learner, a lesson or a pod asks the server. No framework, no build step.
(function () {
  "use strict";
  var selected = new URLSearchParams(window.location.search).get("selected") || "";
  var source = null;
  var lost = document.getElementById("connection");

  function connect() {
    if (source) { source.close(); }
    source = new EventSource("events" + (selected ? "?selected=" + encodeURIComponent(selected) : ""));
    source.addEventListener("regions", function (e) {
      var regions = JSON.parse(e.data);
      Object.keys(regions).forEach(function (id) {
        var el = document.getElementById(id);
        if (el) { el.innerHTML = regions[id]; }  // HTML the server made with every name escaped
      });
      document.body.dataset.updated = String(Date.now());
      lost.hidden = true;
    });
    source.addEventListener("open", function () { lost.hidden = true; });
    source.addEventListener("error", function () { lost.hidden = false; });  // EventSource asks again by itself
  }

  function explain(pod) {
    var panel = document.getElementById("explain");
    if (!panel || !pod) { return; }
    panel.textContent = "Asking the cluster about " + pod + "…";
    fetch("explain?pod=" + encodeURIComponent(pod)).then(function (r) { return r.text(); }).then(function (html) {
      panel.innerHTML = html;  // rendered and escaped by the server
    }, function () {
      panel.textContent = "The page's server did not answer.";
    });
  }

  function act(target) {
    var pick = target.closest("[data-select]");
    if (pick) {
      selected = pick.dataset.select;
      window.history.replaceState(null, "", "?selected=" + encodeURIComponent(selected));
      connect();
      return true;
    }
    var pod = target.closest("[data-pod]");
    if (pod && pod.dataset.pod) { explain(pod.dataset.pod); return true; }
    return false;
  }

  document.addEventListener("click", function (e) { act(e.target); });
  document.addEventListener("keydown", function (e) {
    if ((e.key === "Enter" || e.key === " ") && e.target.matches("[data-pod][role=button]")) {
      e.preventDefault();
      act(e.target);
    }
  });
  connect();
})();
