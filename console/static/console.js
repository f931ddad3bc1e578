// Auto-refresh, a convenience: the pages work without it. A checkbox in
// the header reloads the page every 10 seconds while it is ticked.
(function () {
  "use strict";
  var key = "sluice-autorefresh";
  var nav = document.querySelector("header nav");
  if (!nav || document.querySelector("form[method=post] input[type=password]")) {
    return;
  }
  var label = document.createElement("label");
  label.className = "refresh";
  var box = document.createElement("input");
  box.type = "checkbox";
  box.checked = window.localStorage.getItem(key) === "on";
  label.appendChild(box);
  label.appendChild(document.createTextNode(" Auto-refresh"));
  nav.after(label);
  var timer = null;
  function arm() {
    if (timer) { clearTimeout(timer); timer = null; }
    if (box.checked) { timer = setTimeout(function () { window.location.reload(); }, 10000); }
  }
  box.addEventListener("change", function () {
    window.localStorage.setItem(key, box.checked ? "on" : "off");
    arm();
  });
  arm();
})();
