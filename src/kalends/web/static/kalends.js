// kalends — what script adds to pages that work without it: i tips that open on hover,
// focus and tap and close on Esc; controls that report a lost reply as uncertain and
// offer Check status instead of sending anything again; the preview's stale replies
// dropped (htmx's hx-sync). Nothing here resends a request, ever.
(function () {
  "use strict";
  document.documentElement.classList.remove("no-js");

  // The viewer's zone, so that pages can show a schedule's times in it too (in a tip).
  try {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone && document.cookie.indexOf("kalends_zone=" + zone) === -1) {
      document.cookie = "kalends_zone=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; samesite=lax";
    }
  } catch (e) { /* no zone: times stay in each schedule's own */ }

  // --- i tips (WCAG 1.4.13): hover, focus, click/tap, Enter/Space; Esc and outside close.
  function setOpen(tip, open) {
    tip.classList.toggle("open", open);
    const button = tip.querySelector(".tip-button");
    if (button) button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function closeAll(except) {
    document.querySelectorAll("[data-tip].open").forEach(function (t) {
      if (t !== except && !t.dataset.pinned) setOpen(t, false);
    });
  }
  function wireTip(tip) {
    if (tip.dataset.wired) return;
    tip.dataset.wired = "1";
    const button = tip.querySelector(".tip-button");
    tip.addEventListener("mouseenter", function () { closeAll(tip); setOpen(tip, true); });
    tip.addEventListener("mouseleave", function () { if (!tip.dataset.pinned) setOpen(tip, false); });
    button.addEventListener("focus", function () { closeAll(tip); setOpen(tip, true); });
    button.addEventListener("blur", function () { if (!tip.dataset.pinned) setOpen(tip, false); });
    button.addEventListener("click", function (event) {
      event.preventDefault();
      const pinned = !tip.dataset.pinned;
      if (pinned) tip.dataset.pinned = "1"; else delete tip.dataset.pinned;
      closeAll(tip);
      setOpen(tip, pinned || tip.matches(":hover"));
    });
  }
  // A menu of controls closes on Esc and on a click outside it, as menus do.
  function closeMenus(except) {
    document.querySelectorAll("details.menu[open]").forEach(function (m) {
      if (m !== except) m.open = false;
    });
  }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    const menu = document.activeElement && document.activeElement.closest ?
      document.activeElement.closest("details.menu[open]") : null;
    closeMenus(null);
    if (menu) menu.querySelector("summary").focus();
    document.querySelectorAll("[data-tip].open").forEach(function (t) {
      delete t.dataset.pinned;
      setOpen(t, false);
    });
  });
  document.addEventListener("click", function (event) {
    closeMenus(event.target.closest ? event.target.closest("details.menu") : null);
    document.querySelectorAll("[data-tip].open").forEach(function (t) {
      if (!t.contains(event.target)) { delete t.dataset.pinned; setOpen(t, false); }
    });
  });

  // --- controls: one request per rendered request ID; a lost reply is uncertain.
  function result() { return document.getElementById("control-result"); }
  function show(html) {
    const region = result();
    if (region) { region.innerHTML = html; }
  }
  function escapeText(text) {
    const span = document.createElement("span");
    span.textContent = text;
    return span.innerHTML;
  }
  function wireControl(form) {
    if (form.dataset.wired) return;
    form.dataset.wired = "1";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const button = form.querySelector("button[type=submit]");
      if (form.dataset.sent) return; // this request ID was sent: never again
      form.dataset.sent = "1";
      const menu = form.closest("details.menu");
      if (menu) menu.open = false;
      document.querySelectorAll("form[data-control] button").forEach(function (b) { b.disabled = true; });
      if (button) button.textContent = button.dataset.label + "…";
      const data = new FormData(form);
      const requestId = String(data.get("request_id"));
      const label = button ? button.dataset.label : "control";
      // The form's address (form.action would be its field named "action").
      const target = form.getAttribute("action");
      fetch(target, {
        method: "POST",
        body: new URLSearchParams(data),
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
        redirect: "manual",
      }).then(function (response) {
        return response.text().then(function (html) { show(html); });
      }).catch(function () {
        const check = target.replace(/\/control$/, "/requests/" + encodeURIComponent(requestId)) +
          "?action=" + encodeURIComponent(String(data.get("action"))) +
          "&revision=" + encodeURIComponent(String(data.get("revision")));
        show('<div class="uncertain" role="alert" id="uncertain"><p><strong>Uncertain:</strong> the reply to ' +
          escapeText(label) + ' (request <code>' + escapeText(requestId) + '</code>) was lost. ' +
          'It may or may not have been applied; nothing will be sent again.</p>' +
          '<p><a class="button" href="' + escapeText(check) + '" data-check-status>Check status</a></p></div>');
        if (button) button.textContent = label + " (uncertain)";
      });
    });
  }
  // Check status: the exact read of the control's status, shown in place (a link without script).
  document.addEventListener("click", function (event) {
    const link = event.target.closest ? event.target.closest("a[data-check-status]") : null;
    if (!link) return;
    event.preventDefault();
    fetch(link.href, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.text();
      })
      .then(function (html) {
        const holder = link.closest(".uncertain");
        const box = document.createElement("div");
        box.innerHTML = html;
        if (holder) holder.after(box); else show(html);
      })
      .catch(function () {
        const holder = link.closest(".uncertain");
        const p = document.createElement("p");
        p.textContent = "The status could not be read yet: the server did not answer. Try Check status again.";
        if (holder) holder.appendChild(p);
      });
  });

  function wire(root) {
    root.querySelectorAll("[data-tip]").forEach(wireTip);
    root.querySelectorAll("form[data-control]").forEach(wireControl);
  }
  document.addEventListener("DOMContentLoaded", function () { wire(document); });
  document.addEventListener("htmx:load", function (event) { wire(event.target); });
})();
