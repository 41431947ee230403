// kalends — answering a question. The form posts and works without script; with it, a
// person's own click on "Send the answer" (or a key press that submits: Enter or Space on
// the button, Enter in a field) first asks the server for a one-use token bound to the
// exact answer in the form, puts it in the hidden "token" field and then submits the form.
// Only events the browser marks as trusted (event.isTrusted) ask for a token: a click or a
// submission started by a script never does, and the form then posts without one, as it
// does with script off. A token that cannot be had never stops the answer from being sent.
(function () {
  "use strict";

  function tokenBody(form) {
    const body = new URLSearchParams();
    new FormData(form).forEach(function (value, name) {
      if (name !== "token" && typeof value === "string") body.append(name, value);
    });
    return body;
  }

  function send(form) {
    if (form.dataset.sending) return;
    form.dataset.sending = "1";
    const button = form.querySelector("button[type=submit]");
    const status = form.querySelector("[data-question-status]");
    const hidden = form.querySelector("input[name=token]");
    if (button) button.disabled = true;
    if (status) status.textContent = "Sending…";
    hidden.value = "";
    // A token that does not come within ten seconds is not waited for.
    const abort = typeof AbortController === "function" ? new AbortController() : null;
    const timer = abort ? setTimeout(function () { abort.abort(); }, 10000) : 0;
    fetch(form.dataset.tokenUrl, {
      method: "POST",
      body: tokenBody(form),
      credentials: "same-origin",
      headers: { "Accept": "application/json" },
      signal: abort ? abort.signal : undefined,
    }).then(function (reply) {
      return reply.json().then(function (said) {
        if (reply.ok && typeof said.token === "string") hidden.value = said.token;
      });
    }).catch(function () {
      /* no token: the answer is sent without one */
    }).finally(function () {
      clearTimeout(timer);
      HTMLFormElement.prototype.submit.call(form);
    });
  }

  function wire(form) {
    // A trusted click on the submit button: the pointer's, or the one the browser makes
    // for Enter or Space pressed on it.
    form.addEventListener("click", function (event) {
      if (!event.isTrusted) return;
      const target = event.target instanceof Element ? event.target : null;
      const button = target ? target.closest("button[type=submit]") : null;
      if (!button || !form.contains(button)) return;
      event.preventDefault();
      send(form);
    });
    // Enter in a field (not in a text area, where it starts a new line).
    form.addEventListener("keydown", function (event) {
      if (!event.isTrusted || event.key !== "Enter" || event.isComposing) return;
      const target = event.target;
      if (!(target instanceof HTMLInputElement) || !form.contains(target)) return;
      event.preventDefault();
      send(form);
    });
  }

  function start() {
    document.querySelectorAll("form[data-question-form]").forEach(wire);
  }
  // Back to a page kept in the history: the form can be sent again (a new token is asked).
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[data-question-form]").forEach(function (form) {
      delete form.dataset.sending;
      const button = form.querySelector("button[type=submit]");
      const status = form.querySelector("[data-question-status]");
      const hidden = form.querySelector("input[name=token]");
      if (button) button.disabled = false;
      if (status) status.textContent = "";
      if (hidden) hidden.value = "";
    });
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
