// The tool editor's builders: a value shown as a builder with a JSON view for advanced
// users, rows reordered by drag and by keyboard, the builders any tool has (tool input
// parameters, result display) and a form tool's (below). One module, not two: each module is
// gzipped alone, and the two shared most of their code's words. Every builder edits the
// API's own JSON in place, so a key it does not show is kept as stored; switching views
// keeps the data.

import { get } from "./api.js";
import { button, field, h, mount, parseJsonField, pretty, select } from "./dom.js";
import { DISPLAY_TYPE, choices } from "./labels.js";
import { checkFormSchema, FIELD_TYPES, isObject } from "./schema-check.js";

/** Build the two views of one value: {el, value()}; value() throws a message in words.
 * `builder(value, changed)` returns {el, read(), problems?()}; `check(value)` lists problems. */
export function builderWithJson({ name, label, jsonLabel, id, value, builder, check, fits, onChange = () => {}, allowEmpty = false }) {
  const area = h("textarea", { id, rows: 10, class: "code", spellcheck: "false" });
  const status = h("small.hint", { id: `${id}-status`, "aria-live": "polite" });
  const holder = h("div.builder");
  const toBuilder = button("Builder", undefined, { "aria-pressed": "true" });
  const toJson = button("JSON", undefined, { "aria-pressed": "false" });
  let current = null;
  let json = false;

  const parse = () => {
    const parsed = parseJsonField(area.value, name, { allowEmpty });
    return parsed === undefined ? null : parsed;
  };
  const read = () => (json ? parse() : current.read());
  const problems = (v) => [...(!json && current.problems ? current.problems() : []), ...check(v)];
  const report = () => {
    if (!current) return; // a builder being drawn reports once it is in place
    let list;
    let v;
    try {
      v = read();
      list = problems(v);
    } catch (err) {
      list = [err.message];
    }
    status.textContent = list.length ? list.join("; ") : "Looks valid.";
    status.className = list.length ? "hint bad" : "hint good";
    if (!list.length) onChange(v);
  };
  const show = (v) => {
    current = null;
    current = builder(v, report);
    mount(holder, current.el);
  };
  const setView = (wantJson) => {
    if (wantJson === json) return;
    if (wantJson) {
      area.value = pretty(current.read());
    } else {
      let v;
      try {
        v = parse();
      } catch (err) {
        status.textContent = `The builder needs valid JSON: ${err.message}`;
        status.className = "hint bad";
        area.focus();
        return;
      }
      if (!fits(v)) {
        status.textContent = `The builder cannot show this JSON (${name} has an unexpected shape): fix it here, or keep editing it as JSON.`;
        status.className = "hint bad";
        return;
      }
      show(v);
    }
    json = wantJson;
    paint();
    report();
  };
  const paint = () => {
    holder.hidden = json;
    jsonField.hidden = !json;
    toBuilder.setAttribute("aria-pressed", String(!json));
    toJson.setAttribute("aria-pressed", String(json));
  };
  toBuilder.addEventListener("click", () => setView(false));
  toJson.addEventListener("click", () => setView(true));
  area.addEventListener("input", report);
  const jsonField = h("div.field", { hidden: true }, h("label", { for: id }, jsonLabel), area);
  if (fits(value)) show(value);
  else {
    // JSON the builder cannot show opens in the JSON view, untouched.
    current = null;
    current = builder(undefined, report);
    mount(holder, current.el);
    area.value = pretty(value);
    json = true;
  }
  const el = h("div.stack.built", { role: "group", "aria-label": label },
    h("div.row.views", h("strong", label), h("span.spacer"), toBuilder, toJson),
    holder, jsonField, status);
  paint();
  report();
  return {
    el,
    /** The value to save; throws when it does not parse or would be refused. */
    value() {
      const v = read();
      const list = problems(v);
      if (list.length) throw new Error(list.join("; "));
      return v;
    },
    report,
  };
}

/** Move an item of a list from one place to another (in place). */
export function move(list, from, to) {
  if (to < 0 || to >= list.length || from === to) return false;
  list.splice(to, 0, ...list.splice(from, 1));
  return true;
}

/** A list of rows that can be reordered by drag, by buttons and by Alt+Arrow keys.
 * `draw(item, i)` returns a row's controls; `redraw()` is called after a move. */
export function sortableRows(list, { noun, draw, redraw, announce }) {
  let dragged = null;
  return list.map((item, i) => {
    const moveTo = (to, focusPart) => {
      if (!move(list, i, to)) return;
      redraw();
      announce(`${noun} ${i + 1} moved to position ${to + 1}.`);
      const row = document.querySelectorAll(`[data-rows="${noun}"] > .sortable`)[to];
      const target = row && (row.querySelector(`[data-part="${focusPart}"]`) || row.querySelector("[data-part=handle]"));
      if (target) target.focus();
    };
    const arrow = (text, to, part) => button(text === "up" ? "↑" : "↓", () => moveTo(to, part), { "aria-label": `Move ${noun.toLowerCase()} ${i + 1} ${text}`, dataset: { part }, disabled: to < 0 || to >= list.length });
    const handle = h("span.handle", { draggable: "true", tabindex: "0", role: "button", title: "Drag to move; Alt+↑/↓ moves too", "aria-label": `Drag ${noun.toLowerCase()} ${i + 1} to move it (or press Alt+Up or Alt+Down)`, dataset: { part: "handle" } }, "⠿");
    const row = h("fieldset.sortable.stack");
    handle.addEventListener("dragstart", (e) => {
      dragged = i;
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", String(i));
    });
    row.addEventListener("dragover", (e) => e.preventDefault());
    row.addEventListener("drop", (e) => {
      e.preventDefault();
      const from = dragged ?? Number(e.dataTransfer.getData("text/plain"));
      dragged = null;
      if (!Number.isInteger(from) || !move(list, from, i)) return;
      redraw();
      announce(`${noun} ${from + 1} moved to position ${i + 1}.`);
    });
    row.addEventListener("keydown", (e) => {
      if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
      e.preventDefault();
      moveTo(i + (e.key === "ArrowUp" ? -1 : 1), document.activeElement.dataset.part);
    });
    const tools = h("div.row-tools", handle, arrow("up", i - 1, "up"), arrow("down", i + 1, "down"));
    mount(row, draw(item, i, tools));
    return row;
  });
}

/** Set (or with an empty value remove) a key of an object. */
export function setKey(obj, key, value) {
  if (value === "" || value === null || value === undefined) delete obj[key];
  else obj[key] = value;
}

/** A text input bound to a key of an object. */
export function bound(label, obj, key, changed, attrs = {}, hint) {
  const input = h("input", { value: obj[key] ?? "", dataset: { part: key }, autocomplete: "off", ...attrs });
  input.addEventListener("input", () => {
    setKey(obj, key, input.value);
    changed();
  });
  return field(label, input, hint);
}

// ── Tool input: the parameters of an inputSchema ──

const KINDS = [["string", "Text"], ["number", "Number"], ["integer", "Whole number"], ["boolean", "Yes or no"], ["array", "List"], ["object", "Object"]];

/** A typed value from what was typed, for a parameter of this kind. */
function typed(kind, text) {
  const t = text.trim();
  if ((kind === "number" || kind === "integer") && t !== "" && !Number.isNaN(Number(t))) return Number(t);
  if (kind === "boolean" && (t === "true" || t === "false")) return t === "true";
  if (kind === "array" || kind === "object") {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}
const shown = (v) => (v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));

/** Whether the builder can show an inputSchema (else it opens as JSON). */
export function paramsFit(v) {
  return isObject(v) && (v.properties === undefined || (isObject(v.properties) && Object.values(v.properties).every(isObject))) && (v.required === undefined || Array.isArray(v.required));
}

function paramRow(row, i, tools, { schema, changed, remove, taken }) {
  const prop = row.prop;
  const required = () => (Array.isArray(schema.required) ? schema.required : []);
  const name = h("input", { value: row.name, dataset: { part: "name" }, autocomplete: "off", placeholder: "orderId" });
  name.addEventListener("input", () => {
    const was = row.name;
    row.name = name.value;
    if (required().includes(was) && !taken(was)) schema.required = required().map((r) => (r === was ? row.name : r));
    changed(true);
  });
  const kind = select(KINDS, prop.type, { dataset: { part: "type" } });
  if (!KINDS.some(([k]) => k === prop.type)) kind.prepend(h("option", { value: "", selected: true }, prop.type === undefined ? "(any)" : `${JSON.stringify(prop.type)} (kept)`));
  const given = prop.type;
  kind.addEventListener("change", () => {
    setKey(prop, "type", kind.value || given);
    changed();
  });
  const must = h("input", { type: "checkbox", checked: required().includes(row.name), dataset: { part: "required" } });
  must.addEventListener("change", () => {
    const rest = required().filter((r) => r !== row.name);
    schema.required = must.checked ? [...rest, row.name] : rest;
    changed();
  });
  // Allowed values as a comma-separated list, when every value can be written that way.
  const plain = prop.enum === undefined || (Array.isArray(prop.enum) && prop.enum.every((v) => ["string", "number", "boolean"].includes(typeof v) && !String(v).includes(",")));
  const choices = h("input", { value: plain ? (prop.enum || []).map(shown).join(", ") : JSON.stringify(prop.enum), disabled: !plain, dataset: { part: "enum" }, autocomplete: "off", placeholder: "e.g. small, medium, large" });
  choices.addEventListener("input", () => {
    const values = choices.value.split(",").map((v) => v.trim()).filter(Boolean).map((v) => typed(prop.type, v));
    setKey(prop, "enum", values.length ? values : undefined);
    changed();
  });
  const fallback = h("input", { value: shown(prop.default), dataset: { part: "default" }, autocomplete: "off" });
  fallback.addEventListener("input", () => {
    setKey(prop, "default", fallback.value === "" ? undefined : typed(prop.type, fallback.value));
    changed();
  });
  const about = h("input", { value: prop.description ?? "", dataset: { part: "description" }, autocomplete: "off" });
  about.addEventListener("input", () => {
    setKey(prop, "description", about.value);
    changed();
  });
  return [
    h("legend", `Parameter ${i + 1}: ${row.name}`),
    h("div.row", tools, h("span.spacer"),
      button("Remove", remove, { "aria-label": `Remove parameter ${i + 1}` })),
    h("div.grid2",
      field("Parameter name", name),
      field("Kind of value", kind),
      field("What it is for", about, "The model reads this to fill the parameter."),
      field("Required", must),
      field("Allowed values", choices, plain ? "Comma-separated; empty: any value." : "Edit these in the JSON view."),
      field("Default value", fallback)),
  ];
}

/** The builder of an inputSchema value: {el, read(), problems()}. */
export function paramsBuilder(value, changed) {
  const schema = isObject(value) ? value : { type: "object", properties: {} };
  const rows = Object.entries(schema.properties || {}).map(([name, prop]) => ({ name, prop }));
  const list = h("div.stack", { dataset: { rows: "Parameter" } });
  const said = h("span.sr-only", { "aria-live": "polite" });
  // Properties are written back in the rows' order when a name or the order changes.
  const sync = () => {
    if (rows.length || schema.properties) schema.properties = Object.fromEntries(rows.map((r) => [r.name, r.prop]));
  };
  const onChange = (renamed) => {
    if (renamed) sync();
    changed();
  };
  const redraw = () => {
    sync();
    mount(list, rows.length ? sortableRows(rows, {
      noun: "Parameter",
      redraw,
      announce: (text) => (said.textContent = text),
      draw: (row, i, tools) => paramRow(row, i, tools, {
        schema,
        changed: onChange,
        taken: (name) => rows.some((r) => r !== row && r.name === name),
        remove: () => {
          rows.splice(i, 1);
          if (Array.isArray(schema.required)) schema.required = schema.required.filter((r) => r !== row.name);
          redraw();
        },
      }),
    }) : h("p.muted", "No parameters: the tool is called without input."));
    changed();
  };
  const add = button("Add parameter", () => {
    let n = rows.length + 1;
    while (rows.some((r) => r.name === `param_${n}`)) n += 1;
    rows.push({ name: `param_${n}`, prop: { type: "string" } });
    redraw();
    list.lastElementChild.querySelector("[data-part=name]").select();
  }, { class: "secondary" });
  const el = h("div.stack", list, add, said);
  redraw();
  return {
    el,
    read: () => schema,
    problems: () => rows.flatMap((r, i) => {
      if (!r.name.trim()) return [`Parameter ${i + 1}: give it a name`];
      return rows.findIndex((o) => o.name === r.name) < i ? [`Parameter ${i + 1}: "${r.name}" is used twice`] : [];
    }),
  };
}

// ── Result display: how the widget shows a tool's result ──

const DISPLAYS = choices(DISPLAY_TYPE, ["", "Text (the default)"]);
const SLOTS = { title: "Title", description: "Text under it", price: "Price", image: "Image address", url: "Link", items: "The list of items" };
const SLOTS_OF = {
  product_card: ["title", "description", "price", "image", "url"],
  product_carousel: ["items", "title", "description", "price", "image", "url"],
  image: ["image", "url", "title"],
  table: ["items"],
  buttons: ["items"],
};
const OPTIONS_OF = { product_card: ["showImage", "showPrice"], product_carousel: ["showImage", "showPrice"] };
const OPTION_LABELS = { showImage: "Show the image", showPrice: "Show the price" };

/** Whether the builder can show a displayConfig (else it opens as JSON). */
export const displayFit = (v) => v === null || v === undefined || (isObject(v) && ["fieldMappings", "options"].every((k) => !(k in v) || isObject(v[k])));

/** The builder of displayConfig: {el, read()}; nothing set reads as null. */
export function displayBuilder(value, changed) {
  const config = isObject(value) ? value : {};
  const shownAs = select(DISPLAYS, config.type ?? "", { dataset: { part: "display" } });
  const slots = h("div.grid2");
  const draw = () => {
    const kind = config.type || "text";
    const maps = config.fieldMappings || {};
    const options = config.options || {};
    mount(slots, (SLOTS_OF[kind] || []).map((slot) => {
      const input = h("input", { value: maps[slot] ?? "", placeholder: slot, autocomplete: "off", dataset: { part: slot } });
      input.addEventListener("input", () => {
        config.fieldMappings = config.fieldMappings || {};
        setKey(config.fieldMappings, slot, input.value);
        if (!Object.keys(config.fieldMappings).length) delete config.fieldMappings;
        changed();
      });
      return field(`${SLOTS[slot]}: result field`, input);
    }), (OPTIONS_OF[kind] || []).map((name) => {
      const tick = h("input", { type: "checkbox", checked: options[name] !== false });
      tick.addEventListener("change", () => {
        config.options = { ...(config.options || {}), [name]: tick.checked };
        changed();
      });
      return field(OPTION_LABELS[name], tick);
    }));
  };
  shownAs.addEventListener("change", () => {
    setKey(config, "type", shownAs.value);
    draw();
    changed();
  });
  draw();
  return {
    el: h("div.stack", field("Shown as", shownAs, "How the widget shows the tool's result. A result field is a key of the result, or a dotted path (item.name)."), slots),
    read: () => (Object.keys(config).length ? config : null),
  };
}

/** Header rows (name, value) editing an object of header names to text: {el, value()};
 *  value() is undefined when no row is filled, and throws on a name HTTP does not allow. */
export function headersEditor(label, value, hint) {
  const rows = h("div.stack");
  const add = (name = "", text = "") => {
    const row = h("div.row.pair",
      h("input", { "aria-label": "Header name", value: name, placeholder: "Authorization", autocomplete: "off" }),
      h("input", { "aria-label": "Header value", value: text, placeholder: "Bearer {{API_KEY}}", autocomplete: "off" }),
      button("Remove", () => row.remove()));
    rows.append(row);
  };
  for (const [name, text] of Object.entries(value || {})) add(name, text);
  const read = () => {
    const out = {};
    for (const row of rows.children) {
      const [name, text] = [...row.querySelectorAll("input")].map((i) => i.value.trim());
      if (!name && !text) continue;
      if (!/^[\w!#$%&'*+.^|~-]+$/.test(name)) throw new Error(`${label}: "${name}" is not a header name (letters, digits and dashes)`);
      if (Object.hasOwn(out, name)) throw new Error(`${label}: ${name} is given twice`);
      out[name] = text;
    }
    return Object.keys(out).length ? out : undefined;
  };
  const el = h("fieldset.stack", h("legend", label), rows,
    button("Add header", () => add()),
    h("small.hint", hint));
  return { el, value: read };
}

// ── A form tool's builders: its fields (add, reorder, remove; kind, label, validation,
// options) and texts, a live preview drawn by the widget's own renderer (the real widget in
// a frame of /widget/demo, given the unsaved form by previewForm()), and the post actions
// run after each submission (webhook, team chat, e-mail).

const FIELD_KINDS = {
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
    return h("div.row.option", label, value, remove);
  });
  const add = button("Add option", () => { f.options.push({ label: "", value: "" }); redraw(); });
  return h("div.stack.options", { role: "group", "aria-label": "Options" }, h("small.hint", "Options: the label the visitor sees, the value that is stored"), rows, add);
}

function fieldRow(f, i, tools, { changed, redraw, remove }) {
  const kind = select(Object.entries(FIELD_KINDS), f.type, { dataset: { part: "type" } });
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
    h("legend", `Field ${i + 1}: ${f.label || f.name || ""}`),
    h("div.row", tools, h("span.spacer"),
      button("Remove", remove, { "aria-label": `Remove field ${i + 1}` })),
    h("div.grid2",
      bound("Label", f, "label", changed),
      bound("Field name", f, "name", changed, { placeholder: "email" }, "Letters, digits and _; the key of the answer."),
      field("Kind", kind),
      CHOICE.includes(f.type) ? null : bound("Placeholder", f, "placeholder", changed),
      bound("Help text", f, "description", changed),
      field("Required", required)),
    number || textual ? h("div.grid2.rules",
      number ? [ruleInput("Smallest number", f, "min", changed, { step: "any" }), ruleInput("Largest number", f, "max", changed, { step: "any" })]
        : [ruleInput("Fewest characters", f, "minLength", changed, { min: 0, step: 1 }), ruleInput("Most characters", f, "maxLength", changed, { min: 0, step: 1 }),
          field("Pattern (the whole answer must match)", pattern)]) : null,
    CHOICE.includes(f.type) ? optionRows(f, changed, redraw) : null,
    h("p.bad.row-problems", { dataset: { index: i } }),
  ];
}

/** The builder of a formSchema value: {el, read()} (see builder-view.js). */
export function formBuilder(value, changed) {
  const schema = value && typeof value === "object" && !Array.isArray(value) ? value : {};
  if (!Array.isArray(schema.fields)) schema.fields = [];
  const list = h("div.stack", { dataset: { rows: "Field" } });
  const said = h("span.sr-only", { "aria-live": "polite" });
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
  const el = h("div.stack", list, add, said,
    h("div.grid2",
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
  const holder = h("div.form-preview", h("h3", "Live preview"));
  const draw = () => {
    const widget = frame && frame.contentWindow && frame.contentWindow.agentsvc;
    if (!widget || !widget.ready || !wanted) return;
    widget.previewForm(structuredClone(wanted));
    frame.dataset.previewed = String(Number(frame.dataset.previewed || 0) + 1);
    holder.removeAttribute("aria-busy");
  };
  return {
    el: holder,
    /** Show a form (loads the widget the first time). */
    show(schema) {
      wanted = schema;
      holder.setAttribute("aria-busy", "true"); // until the widget has drawn this form
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
  const box = h("div.stack", { role: "group", "aria-label": "Recipients" }, h("small.hint", "Loading the team…"));
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
    mount(box, box2, others.length ? h("small.hint", `Also kept: ${others.length} former member(s).`) : null);
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
  return h("fieldset.stack",
    h("legend", `Action ${i + 1}`),
    h("div.row", field("Action", kind), button("Remove", remove, { "aria-label": `Remove action ${i + 1}` })),
    (parts[a.type] || (() => h("p.muted", "Edit this action in the JSON view.")))());
}

/** The builder of formPostActions: {el, read(), problems()}; no action reads as null. */
export function actionsBuilder(value, changed) {
  const actions = Array.isArray(value) ? value : [];
  const problems = actions.map(() => ({}));
  const list = h("div.stack");
  const redraw = () => {
    mount(list, actions.length ? actions.map((a, i) => actionRow(a, i, {
      changed, redraw, problems: problems[i],
      remove: () => {
        actions.splice(i, 1);
        problems.splice(i, 1);
        redraw();
      },
    })) : h("p.muted", "No actions: submissions are delivered and kept, nothing more."));
    changed();
  };
  const add = button("Add action", () => {
    actions.push({ type: "webhook", url: "" });
    problems.push({});
    redraw();
  }, { class: "secondary" });
  redraw();
  return {
    el: h("div.stack", list, add),
    read: () => (actions.length ? actions : null),
    problems: () => problems.flatMap((p, i) => Object.values(p).filter(Boolean).map((text) => `Action ${i + 1}: ${text}`)),
  };
}
