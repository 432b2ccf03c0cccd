// Triggers: list with stats and toggles, templates, and an editor for every type and action.

import { enc, get, post, put, qs } from "./api.js";
import { button, field, h, mount, parseJsonField, pretty, select, table, toast } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";
import { TRIGGER_ACTION, TRIGGER_TYPE, choices, plain, triggerAction, triggerType } from "./labels.js";

const TYPES = choices(TRIGGER_TYPE);
const ACTIONS = choices(TRIGGER_ACTION);
let pendingTemplate = null;

function describeConditions(t) {
  const c = t.conditions || {};
  switch (t.triggerType) {
    case "time_on_page": return `after ${c.timeOnPage} s`;
    case "scroll_depth": return `at ${c.scrollDepth} %`;
    case "page_view": return `on ${c.page}`;
    case "custom_event": return `on "${c.event}"${c.eventData ? " " + JSON.stringify(c.eventData) : ""}`;
    default: return "when leaving";
  }
}

/** The agent's triggers with fired/converted counts, a toggle per trigger, and templates. */
export async function renderTriggers(ctx, page) {
  const agent = ctx.agent;
  const [triggers, stats, templates] = await Promise.all([
    get(`/triggers${qs({ agentId: agent.id })}`),
    get(`/triggers/stats${qs({ agentId: agent.id })}`),
    get("/triggers/templates"),
  ]);
  const counts = (t) => stats[t.id] || { firedCount: 0, convertedCount: 0 };
  const columns = [
    ["Name", (t) => h("a", { href: `#/triggers/${enc(t.id)}` }, t.name)],
    ["When", (t) => `${triggerType(t.triggerType)} ${describeConditions(t)}`],
    ["Action", (t) => triggerAction(t.actionType)],
    ["Priority", (t) => String(t.priority)],
    ["Fired", (t) => String(counts(t).firedCount)],
    ["Converted", (t) => String(counts(t).convertedCount)],
    [
      "Enabled",
      (t) => actionButton(t.isEnabled ? "On" : "Off", async (button) => {
        const updated = await post(`/triggers/${enc(t.id)}/toggle`);
        t.isEnabled = updated.isEnabled;
        button.textContent = updated.isEnabled ? "On" : "Off";
        button.setAttribute("aria-pressed", String(updated.isEnabled));
        button.className = updated.isEnabled ? "small toggle on" : "small toggle";
      }, { class: t.isEnabled ? "small toggle on" : "small toggle", "aria-pressed": String(t.isEnabled), "aria-label": `Enabled: ${t.name}` }),
    ],
  ];
  const templateCards = templates.map((tpl) => h("div.template.card",
    h("h3", tpl.name),
    h("p.muted", plain(tpl.description)),
    h("p", h("span.tag", triggerType(tpl.triggerType)), " → ", h("span.tag", triggerAction(tpl.actionType))),
    button("Use template", () => {
      pendingTemplate = tpl;
      ctx.navigate("#/triggers/new");
    })));
  mount(page,
    pageHeader(`Triggers of ${agent.name}`, "Rules that make the widget act on visitor behaviour.", h("a.button", { href: "#/triggers/new" }, "New trigger")),
    table(columns, triggers, "No triggers yet: start from a template below."),
    h("h2", "Templates"),
    h("div.templates", templateCards));
}

function conditionFields(type, c) {
  switch (type) {
    case "time_on_page":
      return [field("Seconds on page", h("input", { name: "timeOnPage", type: "number", min: 0, step: "any", required: true, value: c.timeOnPage ?? 30 }))];
    case "scroll_depth":
      return [field("Scroll depth (%)", h("input", { name: "scrollDepth", type: "number", min: 0, max: 100, required: true, value: c.scrollDepth ?? 50 }))];
    case "page_view":
      return [field("Page (glob)", h("input", { name: "page", required: true, value: c.page ?? "/pricing" }), "An exact path, * for one segment, ** for any depth: /blog/**, /docs/**/api.")];
    case "custom_event":
      return [
        field("Event name", h("input", { name: "event", required: true, value: c.event ?? "" }), "Sent by the page with agentsvc.track(name, data)."),
        field("Event data match (JSON, optional)", h("textarea", { name: "eventData", rows: 3, class: "code" }, c.eventData ? pretty(c.eventData) : ""), 'e.g. {"cartValue": {"$gt": 100}}; operators $eq $ne $gt $gte $lt $lte $in $nin $exists.'),
      ];
    default:
      return [h("p.muted", "Fires when the pointer leaves the top of the window (no conditions).")];
  }
}

function actionFields(action, a, formTools) {
  switch (action) {
    case "show_form":
      return [field("Form tool", select(formTools.length ? formTools.map((t) => [t.id, t.name]) : [["", "No enabled form tool"]], a.toolId, { name: "toolId", required: true }))];
    case "show_bubble":
      return [
        field("Bubble message", h("input", { name: "message", required: true, value: a.message ?? "" })),
        field("Duration (seconds, optional)", h("input", { name: "duration", type: "number", min: 0, step: "any", value: a.duration ?? "" })),
      ];
    default:
      return [
        field("Greeting (optional)", h("input", { name: "greeting", value: a.greeting ?? "" }), "Shown as the agent's first message."),
        field("Pre-filled message (optional)", h("input", { name: "message", value: a.message ?? "" }), "Put in the visitor's text box, not sent."),
      ];
  }
}

function triggerBody(data, type, action) {
  const conditions = {};
  if (type === "time_on_page") conditions.timeOnPage = Number(data.get("timeOnPage"));
  if (type === "scroll_depth") conditions.scrollDepth = Number(data.get("scrollDepth"));
  if (type === "page_view") conditions.page = String(data.get("page")).trim();
  if (type === "custom_event") {
    conditions.event = String(data.get("event")).trim();
    const eventData = parseJsonField(data.get("eventData"), "conditions.eventData", { allowEmpty: true });
    if (eventData !== undefined) conditions.eventData = eventData;
  }
  const actionConfig = {};
  if (action === "show_form") actionConfig.toolId = data.get("toolId");
  if (action === "show_bubble") {
    actionConfig.message = String(data.get("message"));
    if (String(data.get("duration")).trim() !== "") actionConfig.duration = Number(data.get("duration"));
  }
  if (action === "open_chat" && String(data.get("greeting")).trim()) actionConfig.greeting = String(data.get("greeting"));
  if (action === "open_chat" && String(data.get("message")).trim()) actionConfig.message = String(data.get("message"));
  const description = String(data.get("description")).trim();
  return {
    name: String(data.get("name")).trim(),
    description: description || null,
    triggerType: type,
    conditions,
    actionType: action,
    actionConfig,
    triggerOnce: data.get("triggerOnce") === "on",
    isEnabled: data.get("isEnabled") === "on",
    priority: Number(data.get("priority") || 0),
  };
}

/** Create (id "new", optionally from a template) or edit a trigger. */
export async function renderTrigger(ctx, page, id) {
  const agent = ctx.agent;
  const isNew = id === "new";
  let trigger;
  if (isNew) {
    if (!agent) {
      mount(page, pageHeader("New trigger"), h("p.empty", "Create an agent first."));
      return;
    }
    const tpl = pendingTemplate || {};
    pendingTemplate = null;
    trigger = { name: tpl.name || "", description: plain(tpl.description || ""), triggerType: tpl.triggerType || "time_on_page", conditions: tpl.conditions || {}, actionType: tpl.actionType || "open_chat", actionConfig: tpl.actionConfig || {}, triggerOnce: true, isEnabled: true, priority: 0 };
  } else {
    trigger = await get(`/triggers/${enc(id)}`);
  }
  const agentId = isNew ? agent.id : trigger.agentId;
  const formTools = (await get(`/tools${qs({ agentId })}`)).filter((t) => t.executionType === "form" && t.isEnabled);
  const typeSelect = select(TYPES, trigger.triggerType, { name: "triggerType" });
  const actionSelect = select(ACTIONS, trigger.actionType, { name: "actionType" });
  const condBox = h("div.stack");
  const actionBox = h("div.stack");
  const redrawConditions = () => mount(condBox, conditionFields(typeSelect.value, typeSelect.value === trigger.triggerType ? trigger.conditions : {}));
  const redrawAction = () => mount(actionBox, actionFields(actionSelect.value, actionSelect.value === trigger.actionType ? trigger.actionConfig : {}, formTools));
  typeSelect.addEventListener("change", redrawConditions);
  actionSelect.addEventListener("change", redrawAction);
  redrawConditions();
  redrawAction();
  const form = h("form.stack.card", { "aria-label": isNew ? "New trigger" : "Edit trigger" },
    h("div.grid2",
      field("Name", h("input", { name: "name", required: true, value: trigger.name })),
      field("Priority", h("input", { name: "priority", type: "number", step: 1, value: trigger.priority ?? 0 }), "Lower runs first.")),
    field("Description", h("input", { name: "description", value: trigger.description || "" })),
    h("fieldset.stack", h("legend", "When"), field("Trigger type", typeSelect), condBox),
    h("fieldset.stack", h("legend", "Then"), field("Action", actionSelect), actionBox),
    h("div.row",
      field("Only once per visit", h("input", { type: "checkbox", name: "triggerOnce", checked: trigger.triggerOnce !== false })),
      field("Enabled", h("input", { type: "checkbox", name: "isEnabled", checked: trigger.isEnabled !== false }))),
    h("button", { type: "submit" }, isNew ? "Create trigger" : "Save trigger"));
  onSubmit(form, async (data) => {
    const body = triggerBody(data, typeSelect.value, actionSelect.value);
    if (!body.name) throw new Error("name: required");
    if (isNew) {
      const created = await post(`/triggers${qs({ agentId })}`, body);
      toast(`Trigger ${created.name} created`);
    } else {
      await put(`/triggers/${enc(id)}`, body);
      toast("Trigger saved");
    }
    ctx.navigate("#/triggers");
  });
  const remove = isNew ? null : deleteButton("Delete trigger", `Delete trigger "${trigger.name}"?`, "Delete trigger",
    `/triggers/${enc(id)}`, "Trigger deleted", () => ctx.navigate("#/triggers"));
  mount(page, pageHeader(isNew ? "New trigger" : trigger.name, null, h("a.button.secondary", { href: "#/triggers" }, "All triggers"), remove), form);
}
