// The simulation form: while the page runs the simulation, say so and keep the button
// from sending it twice. Without this script the form submits the same way.
(function () {
  "use strict";
  function wire(form) {
    form.addEventListener("submit", function () {
      if (form.getAttribute("aria-busy") === "true") return;
      form.setAttribute("aria-busy", "true");
      const button = form.querySelector("button[type=submit]");
      const status = document.getElementById("simulate-status");
      if (status) status.textContent = "Simulating… a year takes a few seconds, a busy schedule up to a minute.";
      if (button) {
        // (disabled after the submit is under way, so the browser still sends the form)
        window.setTimeout(function () { button.disabled = true; }, 0);
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-simulate]").forEach(wire);
  });
})();
