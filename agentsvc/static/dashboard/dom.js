// Tiny DOM helpers: every piece of data goes in as text (textContent / text nodes), never HTML.

/** Create an element: h("button.x", {onclick: fn}, "text", child, ...); the classes may
 *  follow the tag ("p.muted") or be attrs.class, and attrs may be left out: h("td", text). */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(" ");
  if (attrs?.constructor !== Object) {
    children.unshift(attrs);
    attrs = {};
  }
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "value") {
      el.value = value;
    } else if (key === "checked" || key === "disabled" || key === "selected" || key === "required") {
      el[key] = Boolean(value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Append children (strings become text nodes; arrays are flattened; null is skipped). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace all children of an element. */
export function mount(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

let fieldSeq = 0;

/** A labelled form control; `hint` is shown below it, the error slot is filled by showError. */
export function field(label, control, hint) {
  const id = control.id || `f${++fieldSeq}`;
  control.id = id;
  const wrap = h("div.field");
  if (control.type === "checkbox" || control.type === "radio") {
    wrap.classList.add("check");
    append(wrap, [control, h("label", { for: id }, label)]);
  } else {
    append(wrap, [h("label", { for: id }, label), control]);
  }
  if (hint) {
    const hintEl = h("small.hint", { id: `${id}-hint` }, hint);
    control.setAttribute("aria-describedby", hintEl.id);
    wrap.append(hintEl);
  }
  return wrap;
}

/** Put elements beside a field's control (a slider's number, a colour's hex), in one row. */
export function beside(control, ...extra) {
  const row = h("div.beside");
  control.replaceWith(row);
  return append(row, [control, ...extra]);
}

/** Show an error message in a form's alert region (role=alert so it is announced). */
export function showError(form, message) {
  let box = form.querySelector(":scope > .form-error");
  if (!box) {
    box = h("p.form-error", { role: "alert" });
    form.prepend(box);
  }
  box.textContent = message || "";
  box.hidden = !message;
}

/** A short-lived notice in the corner. */
export function toast(message, kind = "ok") {
  const box = document.getElementById("toasts");
  const note = h("div", { class: `toast ${kind}` }, message);
  box.append(note);
  setTimeout(() => note.remove(), 4000);
}

/** Ask for confirmation with a modal <dialog>; resolves true or false. The confirming
 *  button is red unless `kind` says otherwise (null: the ordinary blue one). */
export function confirmDialog(message, confirmLabel = "Confirm", kind = "danger") {
  return new Promise((resolve) => {
    const dialog = h("dialog.confirm", { "aria-label": "Confirm" });
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    append(dialog, [
      h("p", message),
      h("div.row.end",
        button("Cancel", () => done(false), { class: "secondary" }),
        button(confirmLabel, () => done(true), { class: kind })),
    ]);
    dialog.addEventListener("cancel", () => done(false));
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A button that does something on the page (a small secondary one unless `attrs` say). */
export function button(label, onclick, attrs = {}) {
  return h("button", { type: "button", class: "secondary small", onclick, ...attrs }, label);
}

/** Previous and Next under a list paged by cursor: each moves `view` ({cursor, back: the
 *  cursors of earlier pages, shown: the rows before this page, limit}), then calls `go`. */
export function pager(view, next, count, go, between = null, [back, on] = ["Previous", "Next"]) {
  const step = (label, off, move) => button(label, () => {
    move();
    go();
  }, { disabled: off });
  return h("div.row.pager",
    step(back, !view.back.length, () => {
      view.cursor = view.back.pop();
      view.shown = Math.max(0, view.shown - view.limit);
    }),
    between,
    step(on, !next, () => {
      view.back.push(view.cursor);
      view.cursor = next;
      view.shown += count;
    }));
}

/** Save a file the page links to (named `file`, else as the server says). */
export function download(href, file = "") {
  const a = h("a", { href, download: file, class: "offscreen" });
  document.body.append(a);
  a.click();
  a.remove();
}

/** A table from columns [label, row => node|string] and rows. */
export function table(columns, rows, empty = "Nothing here yet.", label = undefined) {
  if (!rows.length) return h("p.empty", empty);
  // Focusable, so a table that scrolls sideways on a narrow screen scrolls by keyboard too.
  return h("div.table-wrap", { tabindex: "0", role: "region", "aria-label": label || "Table" },
    h("table", { "aria-label": label },
      h("thead", h("tr", columns.map((c) => h("th", { scope: "col" }, c[0])))),
      h("tbody", rows.map((row) => h("tr", columns.map((c) => h("td", c[1](row))))))));
}

const stamps = [new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }), new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" })];

/** A date and time from an ISO timestamp, in the browser's language and time zone (with
 *  the seconds for logs, where events come close together). */
export function when(iso, seconds = false) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : stamps[seconds ? 1 : 0].format(d);
}

/** A member's picture, else their initial (beside their name: no alt text). */
export function avatar(person) {
  // The URL is on the public address (for visitors); here the same path on this origin,
  // which the page's policy allows whatever address the dashboard was opened at.
  if (person && person.avatarUrl) return h("img.avatar", { src: new URL(person.avatarUrl, location.href).pathname, alt: "" });
  return h("span.avatar", { "aria-hidden": "true" }, String((person && person.name) || "?")[0].toUpperCase());
}

/** A select element from [value, label] pairs. */
export function select(options, value, attrs = {}) {
  return h("select", attrs, options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

/** Parse JSON typed by a person; throws an Error naming the field and the position. */
export function parseJsonField(text, name, { allowEmpty = false } = {}) {
  const trimmed = (text || "").trim();
  if (!trimmed) {
    if (allowEmpty) return undefined;
    throw new Error(`${name}: JSON is required`);
  }
  try {
    return JSON.parse(trimmed);
  } catch (err) {
    throw new Error(`${name}: not valid JSON (${err.message})`);
  }
}

/** Pretty JSON for a textarea. */
export function pretty(value) {
  return value === undefined || value === null ? "" : JSON.stringify(value, null, 2);
}

/** Copy text to the clipboard, with a fallback for non-secure contexts. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea.offscreen");
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    return ok;
  }
}
