// kalends editor — what script adds to the schedule editor, which works without it: the
// browser's own zone offered for the zone field, the first field in error focused, and
// the live preview's order kept. Each preview request carries a sequence number, bumped
// on every edit; the reply echoes it, and a reply older than the newest one shown is
// dropped (htmx's hx-sync already aborts an older request still in flight).
(function () {
  "use strict";

  function wire() {
    const form = document.querySelector("form[data-editor]");
    if (!form || form.dataset.wired) return;
    form.dataset.wired = "1";

    // --- the browser's zone, offered (never chosen on its own) --------------------------
    const button = document.getElementById("browser-zone");
    const zoneField = document.getElementById("f-zone");
    try {
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (zone && button && zoneField) {
        button.textContent = "Use my zone (" + zone + ")";
        button.hidden = false;
        button.addEventListener("click", function () {
          zoneField.value = zone;
          zoneField.dispatchEvent(new Event("change", { bubbles: true }));
          zoneField.focus();
        });
      }
    } catch (e) { /* no zone known: the field stays as it is */ }

    // --- the first field in error -------------------------------------------------------
    const invalid = form.querySelector("[aria-invalid='true']");
    if (invalid && document.activeElement !== invalid) invalid.focus();

    // --- the preview's sequence ---------------------------------------------------------
    const seqField = form.querySelector("input[name='seq']");
    let sent = seqField ? Number(seqField.value) || 0 : 0;
    let shown = sent;
    function bump() { if (seqField) { sent += 1; seqField.value = String(sent); } }
    // Capture: the number moves before htmx reads the form for this edit's request.
    form.addEventListener("input", bump, true);
    form.addEventListener("change", bump, true);

    document.body.addEventListener("htmx:beforeSwap", function (event) {
      const target = event.detail.target;
      if (!target || target.id !== "preview-body") return;
      const found = /data-seq="(\d+)"/.exec(event.detail.serverResponse || "");
      const seq = found ? Number(found[1]) : 0;
      if (seq < shown) {
        event.detail.shouldSwap = false;  // a stale reply: a newer preview is shown
        return;
      }
      shown = seq;
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wire);
  } else {
    wire();
  }
})();
