// kalends — what script adds to a list's checklist tree, which works without it: a task
// moves among its siblings by dragging its handle (pointer: mouse, pen or touch) or with
// Alt+ArrowUp / Alt+ArrowDown (ArrowUp / ArrowDown on the handle). Every way posts the
// same form as the ↑ and ↓ buttons, with the revision the page showed; the page comes
// back with the moved task focused.
(function () {
  "use strict";
  const FOCUS_KEY = "kalends-task-focus";

  function itemOf(el) { return el && el.closest ? el.closest("li.task-item") : null; }
  function formOf(item) { return item.querySelector(":scope > .task-row > form.row-actions"); }

  function remember(item, from) {
    try { sessionStorage.setItem(FOCUS_KEY, item.dataset.task + " " + from); } catch (e) { /* none */ }
  }

  // Sends the move form: before or after a sibling, as the ↑ / ↓ buttons do.
  function post(item, where, sibling, from) {
    const form = formOf(item);
    if (!form || item.dataset.sent) return;
    item.dataset.sent = "1";
    const field = document.createElement("input");
    field.type = "hidden";
    field.name = where;
    field.value = sibling.dataset.task;
    form.appendChild(field);
    form.setAttribute("action", "/tasks/" + item.dataset.task + "/move");
    form.querySelectorAll("input[name=complete_subtree]").forEach(function (box) { box.checked = false; });
    remember(item, from);
    form.submit();
  }

  function step(item, up, from) {
    const sibling = up ? item.previousElementSibling : item.nextElementSibling;
    if (!sibling || !sibling.matches("li.task-item")) return false;
    post(item, up ? "before" : "after", sibling, from);
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "ArrowUp" && event.key !== "ArrowDown") return;
    const target = event.target;
    const onHandle = target.matches && target.matches("[data-drag]");
    if (!event.altKey && !onHandle) return;
    if (target.closest && target.closest("select, textarea")) return;
    const item = itemOf(target);
    if (!item || !item.closest("[data-reorder]")) return;
    if (step(item, event.key === "ArrowUp", onHandle ? "drag" : "title")) event.preventDefault();
  });

  // --- dragging a handle with any pointer ----------------------------------------------
  let drag = null;

  function clearMarks() {
    document.querySelectorAll(".drop-before, .drop-after").forEach(function (el) {
      el.classList.remove("drop-before", "drop-after");
    });
  }

  function dropTarget(x, y) {
    const under = document.elementFromPoint(x, y);
    const item = itemOf(under);
    if (!item || item === drag.item || item.parentElement !== drag.item.parentElement) return null;
    const box = item.querySelector(":scope > .task-row").getBoundingClientRect();
    return { item: item, where: y < box.top + box.height / 2 ? "before" : "after" };
  }

  document.addEventListener("pointerdown", function (event) {
    const handle = event.target.closest ? event.target.closest("[data-drag]") : null;
    if (!handle || event.button !== 0) return;
    const item = itemOf(handle);
    if (!item) return;
    event.preventDefault();
    handle.setPointerCapture(event.pointerId);
    drag = { item: item, handle: handle, target: null, moved: false };
    item.classList.add("dragging");
  });

  document.addEventListener("pointermove", function (event) {
    if (!drag) return;
    drag.moved = true;
    clearMarks();
    drag.target = dropTarget(event.clientX, event.clientY);
    if (drag.target) drag.target.item.classList.add("drop-" + drag.target.where);
  });

  function endDrag(send) {
    if (!drag) return;
    const done = drag;
    drag = null;
    clearMarks();
    done.item.classList.remove("dragging");
    if (send && done.target) post(done.item, done.target.where, done.target.item, "drag");
  }
  document.addEventListener("pointerup", function () { endDrag(true); });
  document.addEventListener("pointercancel", function () { endDrag(false); });
  document.addEventListener("keydown", function (event) { if (event.key === "Escape") endDrag(false); });

  // Back from a move: the moved task has focus again, where the move was made from (once
  // the page has loaded: going to the address's #task-… fragment would take focus away).
  window.addEventListener("load", function () {
    let said = null;
    try {
      said = sessionStorage.getItem(FOCUS_KEY);
      sessionStorage.removeItem(FOCUS_KEY);
    } catch (e) { said = null; }
    if (!said) return;
    const parts = said.split(" ");
    const item = document.getElementById("task-" + parts[0]);
    if (!item) return;
    const focus = parts[1] === "drag" ? item.querySelector("[data-drag]") : item.querySelector(".task-title");
    if (focus) {
      item.classList.add("focused");
      setTimeout(function () { focus.focus(); }, 0);
    }
  });
})();
