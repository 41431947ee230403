// kalends task page — what script adds to a page that works without it: the browser's
// own zone offered for a zone field (never chosen on its own), only the chosen due kind's
// fields shown, and the first field in error focused.
(function () {
  "use strict";

  function wire() {
    let zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    document.querySelectorAll("button[data-zone-for]").forEach(function (button) {
      const field = document.getElementById(button.dataset.zoneFor);
      if (!zone || !field) return;
      button.textContent = "Use my zone (" + zone + ")";
      button.hidden = false;
      button.addEventListener("click", function () {
        field.value = zone;
        field.dispatchEvent(new Event("change", { bubbles: true }));
        field.focus();
      });
    });

    const form = document.querySelector("form[data-task-schedule]");
    if (form) {
      const show = function () {
        const chosen = form.querySelector("input[name='due_kind']:checked");
        form.dataset.due = chosen ? chosen.value : "none";
      };
      form.classList.add("js-due");
      show();
      form.addEventListener("change", function (event) {
        if (event.target && event.target.name === "due_kind") show();
      });
    }

    const invalid = document.querySelector("main [aria-invalid='true']");
    if (invalid && document.activeElement !== invalid) invalid.focus();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wire);
  } else {
    wire();
  }
})();
