// The builders of a form tool: its fields (add, reorder, remove; kind, label, validation,
// options) and texts, a live preview drawn by the widget's own renderer (the real widget in
// a frame of /widget/demo, given the unsaved form by previewForm()), and the post actions
// run after each submission (webhook, team chat, e-mail).

import { get } from "./api.js";
import { bound, setKey, sortableRows } from "./builders.js";
import { button, field, h, mount, select } from "./dom.js";
import { checkFormSchema, FIELD_TYPES, isObject } from "./schema-check.js";

const KINDS = {
  text: "Short text", email: "E-mail", tel: "Phone", number: "Number", textarea: "Long text", select: "Choice (one)",
  multiselect: "Choices (several)", date: "Date", datetime: "Date and time", file: "File", image: "Image",
};
const CHOICE = ["select", "multiselect"];
const TEXTUAL = ["text", "textarea", "email", "tel"];

/** Set one validation rule's value, keeping its message; an empty value removes the rule. */
function setRule(f, rule, value) {
  const rules = f.validation && typeof f.validation === "object" ? f.validation : {};
  if (value === "" || value === null || value === false || Number.isNaN(value)) delete rules[rule];
  else if (rules[rule] && typeof rules[rule] === "object") rules[rule].value = value;
  else rules[rule] = { value };
  if (Object.keys(rules).length) f.validation = rules;
  else delete f.validation;
}

const ruleValue = (f, rule) => {
  const r = f.validation && f.validation[rule];
  const v = r && typeof r === "object" ? r.value : r;
  return v === undefined || v === null ? "" : v;
};

function ruleInput(label, f, rule, changed, attrs) {
  const input = h("input", { type: "number", value: ruleValue(f, rule), dataset: { part: rule }, ...attrs });
  input.addEventListener("input", () => {
    setRule(f, rule, input.value === "" ? "" : Number(input.value));
    changed();
  });
  return field(label, input);
}

function optionRows(f, changed, redraw) {
  const auto = new WeakSet(f.options.filter((o) => o.value === o.label));
  const rows = f.options.map((o, j) => {
    const label = h("input", { value: o.label ?? "", "aria-label": `Option ${j + 1} label`, autocomplete: "off" });
    const value = h("input", { value: o.value ?? "", "aria-label": `Option ${j + 1} value`, autocomplete: "off" });
    label.addEventListener("input", () => {
      o.label = label.value;
      if (auto.has(o)) value.value = o.value = label.value;
      changed();
    });
    value.addEventListener("input", () => {
      // A number stays a number while it is typed as one (the API keeps either).
      o.value = typeof o.value === "number" && value.value.trim() !== "" && !Number.isNaN(Number(value.value)) ? Number(value.value) : value.value;
      auto.delete(o);
      changed();
    });
    const remove = button("✕", () => { f.options.splice(j, 1); redraw(); }, { "aria-label": `Remove option ${j + 1}` });
    return h("div", { class: "row option" }, label, value, remove);
  });
  const add = button("Add option", () => { f.options.push({ label: "", value: "" }); redraw(); });
  return h("div", { class: "stack options", role: "group", "aria-label": "Options" }, h("small", { class: "hint" }, "Options: the label the visitor sees, the value that is stored"), rows, add);
}

function fieldRow(f, i, tools, { changed, redraw, remove }) {
  const kind = select(Object.entries(KINDS), f.type, { dataset: { part: "type" } });
  if (!FIELD_TYPES.includes(f.type)) kind.prepend(h("option", { value: f.type ?? "", selected: true }, `${f.type} (unknown)`));
  kind.addEventListener("change", () => {
    f.type = kind.value;
    if (CHOICE.includes(f.type)) f.options = Array.isArray(f.options) && f.options.length ? f.options : [{ label: "Option 1", value: "option_1" }];
    else delete f.options;
    redraw();
  });
  const required = h("input", { type: "checkbox", checked: Boolean(ruleValue(f, "required")), dataset: { part: "required" } });
  required.addEventListener("change", () => {
    setRule(f, "required", required.checked);
    changed();
  });
  const number = f.type === "number";
  const textual = TEXTUAL.includes(f.type);
  const pattern = h("input", { value: ruleValue(f, "pattern"), dataset: { part: "pattern" }, autocomplete: "off", placeholder: "e.g. [A-Z]{3}-[0-9]+" });
  pattern.addEventListener("input", () => {
    setRule(f, "pattern", pattern.value);
    changed();
  });
  return [
    h("legend", {}, `Field ${i + 1}: ${f.label || f.name || ""}`),
    h("div", { class: "row" }, tools, h("span", { class: "spacer" }),
      button("Remove", remove, { "aria-label": `Remove field ${i + 1}` })),
    h("div", { class: "grid2" },
      bound("Label", f, "label", changed),
      bound("Field name", f, "name", changed, { placeholder: "email" }, "Letters, digits and _; the key of the answer."),
      field("Kind", kind),
      CHOICE.includes(f.type) ? null : bound("Placeholder", f, "placeholder", changed),
      bound("Help text", f, "description", changed),
      field("Required", required)),
    number || textual ? h("div", { class: "grid2 rules" },
      number ? [ruleInput("Smallest number", f, "min", changed, { step: "any" }), ruleInput("Largest number", f, "max", changed, { step: "any" })]
        : [ruleInput("Fewest characters", f, "minLength", changed, { min: 0, step: 1 }), ruleInput("Most characters", f, "maxLength", changed, { min: 0, step: 1 }),
          field("Pattern (the whole answer must match)", pattern)]) : null,
    CHOICE.includes(f.type) ? optionRows(f, changed, redraw) : null,
    h("p", { class: "bad row-problems", dataset: { index: i } }),
  ];
}

/** The builder of a formSchema value: {el, read()} (see builder-view.js). */
export function formBuilder(value, changed) {
  const schema = value && typeof value === "object" && !Array.isArray(value) ? value : {};
  if (!Array.isArray(schema.fields)) schema.fields = [];
  const list = h("div", { class: "stack", dataset: { rows: "Field" } });
  const said = h("span", { class: "sr-only", "aria-live": "polite" });
  const problems = () => {
    const found = checkFormSchema(schema);
    for (const p of list.querySelectorAll(".row-problems")) {
      const at = `formSchema.fields.${p.dataset.index}.`;
      p.textContent = found.filter((x) => x.startsWith(at)).map((x) => x.slice(at.length)).join("; ");
    }
  };
  const onChange = () => {
    problems();
    changed();
  };
  const redraw = () => {
    mount(list, sortableRows(schema.fields, {
      noun: "Field",
      redraw,
      announce: (text) => (said.textContent = text),
      draw: (f, i, tools) => fieldRow(f, i, tools, {
        changed: onChange,
        redraw,
        remove: () => {
          schema.fields.splice(i, 1);
          redraw();
        },
      }),
    }));
    onChange();
  };
  const add = button("Add field", () => {
    let n = schema.fields.length + 1;
    while (schema.fields.some((f) => f.name === `field_${n}`)) n += 1;
    schema.fields.push({ name: `field_${n}`, label: `Field ${n}`, type: "text" });
    redraw();
    list.lastElementChild.querySelector("[data-part=label]").focus();
  }, { class: "secondary" });
  const el = h("div", { class: "stack" }, list, add, said,
    h("div", { class: "grid2" },
      bound("Form title", schema, "title", onChange),
      bound("Intro text", schema, "description", onChange),
      bound("Submit button text", schema, "submitLabel", onChange, { placeholder: "Send" }),
      bound("Message after sending", schema, "successMessage", onChange, { placeholder: "Thank you!" })));
  redraw();
  return { el, read: () => schema };
}

/** The live preview: the real widget, asked to draw the unsaved form. */
export function formPreview(agentId) {
  let frame = null;
  let wanted = null;
  let timer = null;
  const holder = h("div", { class: "form-preview" }, h("h3", {}, "Live preview"));
  const draw = () => {
    const widget = frame && frame.contentWindow && frame.contentWindow.agentsvc;
    if (!widget || !widget.ready || !wanted) return;
    widget.previewForm(structuredClone(wanted));
    frame.dataset.previewed = String(Number(frame.dataset.previewed || 0) + 1);
  };
  return {
    el: holder,
    /** Show a form (loads the widget the first time). */
    show(schema) {
      wanted = schema;
      if (!frame) {
        frame = h("iframe", { src: `/widget/demo?agentId=${encodeURIComponent(agentId)}`, title: "Form preview", class: "widget-frame preview-frame" });
        frame.addEventListener("load", () => {
          const poll = setInterval(() => {
            const win = frame.contentWindow; // null once the editor is left
            if (win && !(win.agentsvc && win.agentsvc.ready)) return;
            clearInterval(poll);
            draw();
          }, 100);
          setTimeout(() => clearInterval(poll), 15000);
        });
        holder.append(frame);
      }
      clearTimeout(timer);
      timer = setTimeout(draw, 200);
    },
  };
}

// ── Post actions ──

const ACTIONS = [["webhook", "Call a webhook"], ["team_chat", "Post to a team chat"], ["email", "Send an e-mail to members"]];

/** Whether the builder can show formPostActions (else they open as JSON). */
export const actionsFit = (v) => v === null || v === undefined || (Array.isArray(v) && v.every((a) => isObject(a) && (!("headers" in a) || isObject(a.headers))));

let members = null;
/** The team's members, for an e-mail action's recipients (asked once per page load). */
function teamMembers() {
  members = members || get("/team/members").catch(() => []);
  return members;
}

function headerLines(a, changed, problems) {
  const area = h("textarea", { rows: 2, class: "code", dataset: { part: "headers" } }, Object.entries(a.headers || {}).map(([k, v]) => `${k}: ${v}`).join("\n"));
  area.addEventListener("input", () => {
    const lines = area.value.split("\n").filter((l) => l.trim());
    const bad = lines.find((l) => !/^[^:]+:/.test(l));
    problems.headers = bad ? `Headers: "${bad}" is not Name: value` : null;
    setKey(a, "headers", lines.length ? Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).trim(), l.slice(l.indexOf(":") + 1).trim()])) : undefined);
    changed();
  });
  return field("Headers (one per line, Name: value)", area, "{{SECRET}} is filled from the team's secrets.");
}

function payloadJson(a, changed, problems) {
  const area = h("textarea", { rows: 3, class: "code", dataset: { part: "payload" } }, a.payload ? JSON.stringify(a.payload, null, 2) : "");
  area.addEventListener("input", () => {
    problems.payload = null;
    if (!area.value.trim()) delete a.payload;
    else {
      try {
        a.payload = JSON.parse(area.value);
      } catch (err) {
        problems.payload = `Payload: not valid JSON (${err.message})`;
      }
    }
    changed();
  });
  return field("Payload (JSON object, optional)", area, "Sent instead of the submission; {{field}} is filled in.");
}

function recipients(a, changed) {
  const box = h("div", { class: "stack", role: "group", "aria-label": "Recipients" }, h("small", { class: "hint" }, "Loading the team…"));
  teamMembers().then((list) => {
    const ids = new Set(a.recipientIds || []);
    const known = new Set(list.map((m) => m.id));
    const box2 = list.map((m) => {
      const id = m.id;
      const tick = h("input", { type: "checkbox", checked: ids.has(id) });
      tick.addEventListener("change", () => {
        const rest = (a.recipientIds || []).filter((r) => r !== id);
        a.recipientIds = tick.checked ? [...rest, id] : rest;
        changed();
      });
      return field(m.name ? `${m.name} (${m.email})` : m.email, tick);
    });
    const others = [...ids].filter((id) => !known.has(id));
    mount(box, box2, others.length ? h("small", { class: "hint" }, `Also kept: ${others.length} former member(s).`) : null);
  });
  return box;
}

function actionRow(a, i, { changed, redraw, remove, problems }) {
  const kind = select(ACTIONS, a.type, { dataset: { part: "kind" } });
  kind.addEventListener("change", () => {
    const url = a.url ?? a.webhookUrl;
    for (const key of Object.keys(a)) delete a[key];
    a.type = kind.value;
    if (url && kind.value !== "email") a[kind.value === "webhook" ? "url" : "webhookUrl"] = url;
    if (kind.value === "team_chat") a.messageTemplate = "New form from {{_toolName}}";
    redraw();
  });
  const urlKey = a.type === "webhook" && !("webhookUrl" in a) ? "url" : "webhookUrl";
  const parts = {
    webhook: () => [bound("Address", a, urlKey, changed, { placeholder: "https://example.com/hooks/form" }), headerLines(a, changed, problems), payloadJson(a, changed, problems)],
    team_chat: () => [bound("Address", a, "webhookUrl", changed, { placeholder: "https://hooks.slack.com/services/…" }, "The incoming-webhook address of a Slack, Teams or Discord channel."),
      bound("Message", a, "message" in a ? "message" : "messageTemplate", changed, {}, "{{field}}: that answer; {{_toolName}}: the tool's name.")],
    email: () => [recipients(a, changed), bound("Subject", a, "subject", changed)],
  };
  return h("fieldset", { class: "stack" },
    h("legend", {}, `Action ${i + 1}`),
    h("div", { class: "row" }, field("Action", kind), button("Remove", remove, { "aria-label": `Remove action ${i + 1}` })),
    (parts[a.type] || (() => h("p", { class: "muted" }, "Edit this action in the JSON view.")))());
}

/** The builder of formPostActions: {el, read(), problems()}; no action reads as null. */
export function actionsBuilder(value, changed) {
  const actions = Array.isArray(value) ? value : [];
  const problems = actions.map(() => ({}));
  const list = h("div", { class: "stack" });
  const redraw = () => {
    mount(list, actions.length ? actions.map((a, i) => actionRow(a, i, {
      changed, redraw, problems: problems[i],
      remove: () => {
        actions.splice(i, 1);
        problems.splice(i, 1);
        redraw();
      },
    })) : h("p", { class: "muted" }, "No actions: submissions are delivered and kept, nothing more."));
    changed();
  };
  const add = button("Add action", () => {
    actions.push({ type: "webhook", url: "" });
    problems.push({});
    redraw();
  }, { class: "secondary" });
  redraw();
  return {
    el: h("div", { class: "stack" }, list, add),
    read: () => (actions.length ? actions : null),
    problems: () => problems.flatMap((p, i) => Object.values(p).filter(Boolean).map((text) => `Action ${i + 1}: ${text}`)),
  };
}
