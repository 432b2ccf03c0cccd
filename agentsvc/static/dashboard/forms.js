// Shared form plumbing for the management pages.

import { del, describe } from "./api.js";
import { confirmDialog, h, showError, toast } from "./dom.js";

/** Handle a form's submit: disable its buttons, show any error inline (role=alert). */
export function onSubmit(form, fn) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => (b.disabled = true));
    showError(form, "");
    try {
      await fn(new FormData(form));
    } catch (err) {
      showError(form, describe(err));
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  });
  return form;
}

/** Run an action from a button, reporting failure next to it. */
export function actionButton(label, fn, attrs = {}) {
  const button = h("button", { type: "button", ...attrs });
  button.textContent = label;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await fn(button);
    } catch (err) {
      toast(describe(err), "error");
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/** A button that deletes `path` once the person confirms `question` (on the `yes` button),
 *  then says `said` and runs `after`. */
export function deleteButton(label, question, yes, path, said, after, attrs = { class: "danger" }) {
  return actionButton(label, async () => {
    if (!(await confirmDialog(question, yes))) return;
    await del(path);
    toast(said);
    await after();
  }, attrs);
}

/** A page header: title, optional subtitle and action elements on the right. */
export function pageHeader(title, subtitle, ...actions) {
  return h("div.page-head",
    h("div", h("h1", title), subtitle ? h("p.muted", subtitle) : null),
    h("div.actions", actions));
}
