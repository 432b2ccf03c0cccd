// Deliveries to other systems, one page each. Event webhooks (owner): create with the events
// to send (the secret is shown once), list, delete; one webhook's delivery log with the body
// sent, every attempt, and Redeliver. Form submissions: filter by status and agent, read one
// with its delivery log, redeliver. And the team's other log, the audit log (below).

import { BASE, enc, get, post, qs } from "./api.js";
import { button, copyText, download, field, h, mount, pager, pretty, select, table, toast, when } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";
import { AUDIT_ACTION, actorVia, auditAction, choices, DELIVERY_STATUS, deliveryStatus, executionMode, postAction, role, SUBMISSION_STATUS, submissionStatus, toolType, webhookEvent, words } from "./labels.js";

/** Event types and what they mean (the API refuses any other). */
export const EVENTS = [
  ["conversation.created", "A conversation starts"],
  ["message.created", "A message is stored (visitor, agent or member)"],
  ["feedback.created", "A message is rated"],
  ["form.submitted", "A form is submitted"],
  ["conversation.handoff", "A person is asked for"],
  ["conversation.assigned", "A member takes a conversation"],
  ["conversation.released", "A conversation is handed back to the agent"],
  ["conversation.closed", "A conversation is closed"],
  ["conversation.reopened", "A visitor writes to a closed conversation"],
];
// Pages of the delivery log by cursor; `back` holds the cursors of earlier pages.
const view = { webhookId: "", status: "", cursor: null, back: [], shown: 0, limit: 20 };

function ownerOnly(page, title) {
  mount(page, pageHeader(title), h("p.empty", "Only the team owner manages event webhooks: they send the team's data to other systems."));
}

const FAILED = new Set(["webhook_failed", "client_failed", "failed"]);

/** A delivery's status (or, labelled so, a form submission's) as a coloured tag. */
function statusTag(status, label = deliveryStatus) {
  const kind = FAILED.has(status) ? "bad" : status === "pending" ? "warn" : "good";
  return h("span", { class: `tag ${kind}` }, label(status));
}

/** The team's webhooks and the form that creates one. */
export async function renderWebhooks(ctx, page) {
  if (!ctx.isOwner) return ownerOnly(page, "Webhooks");
  const hooks = await get("/webhooks");
  const reveal = h("div.reveal-slot");
  const checks = EVENTS.map(([type, label]) =>
    h("label.event-choice", { title: `Sent with "type": "${type}"` }, h("input", { type: "checkbox", name: "events", value: type }), " ", h("strong", webhookEvent(type)), h("span.muted", ` ${label}`)));
  const form = onSubmit(h("form.stack.card", { "aria-label": "Create a webhook" },
    field("Endpoint URL", h("input", { name: "url", type: "url", required: true, maxlength: 2048, placeholder: "https://crm.example.com/agentsvc" }),
      "Receives a signed POST for each event (Standard Webhooks headers)."),
    field("Description", h("input", { name: "description", maxlength: 200, placeholder: "CRM sync" })),
    h("fieldset", h("legend", "Events to send"), checks),
    h("button", { type: "submit" }, "Create webhook")), async (data) => {
    const events = data.getAll("events").map(String);
    if (!events.length) throw new Error("events: choose at least one event");
    const body = { url: String(data.get("url")).trim(), events };
    const description = String(data.get("description") || "").trim();
    if (description) body.description = description;
    const created = await post("/webhooks", body);
    mount(reveal, h("div.card.reveal", { role: "status" },
      h("p", h("strong", "Copy this signing secret now: it is shown only once.")),
      h("code.secret-value", { id: "new-webhook-secret" }, created.secret),
      h("p.muted", "Verify each request's webhook-signature with it (any Standard Webhooks library)."),
      h("div.row",
        button("Copy secret", async () => toast((await copyText(created.secret)) ? "Secret copied" : "Copy it by hand", "ok"), { class: "small" }))));
    form.reset();
    toast("Webhook created");
    await refreshList();
  });
  const listSlot = h("div");
  async function refreshList(rows) {
    const current = rows || (await get("/webhooks"));
    mount(listSlot, table([
      ["Endpoint", (w) => h("a", { href: `#/webhooks/${enc(w.id)}` }, w.url)],
      ["Description", (w) => w.description || "—"],
      ["Events", (w) => w.events.map(webhookEvent).join(", ")],
      ["Created", (w) => when(w.createdAt)],
      ["", (w) => deleteButton("Delete", `Delete the webhook to ${w.url}? Events stop at once and its pending deliveries are dropped.`, "Delete webhook",
        `/webhooks/${enc(w.id)}`, "Webhook deleted", refreshList, { class: "danger small", "aria-label": `Delete ${w.url}` })],
    ], current, "No webhooks yet.", "Webhooks"));
  }
  await refreshList(hooks);
  mount(page,
    pageHeader("Webhooks", "Send conversations, messages, feedback, form submissions and handoffs to your own systems as they happen."),
    form, reveal, listSlot);
}

/** Every attempt of one delivery (a form submission's too); `none` stands for no HTTP status. */
export function attemptsTable(log, label, none = "—") {
  return table([
    ["#", (a) => String(a.attempt)],
    ["Started", (a) => when(a.startedAt, true)],
    ["HTTP", (a) => (a.statusCode == null ? none : String(a.statusCode))],
    ["Latency", (a) => `${a.latencyMs} ms`],
    ["Result", (a) => (a.success ? h("span.good", "Delivered") : h("span.bad", a.error || "failed"))],
    ["Response", (a) => (a.responseBody ? h("code", a.responseBody.slice(0, 200)) : "")],
  ], log, "No attempt yet.", label);
}

/** One webhook: its delivery log, newest first, with details and Redeliver. */
export async function renderWebhook(ctx, page, id) {
  if (!ctx.isOwner) return ownerOnly(page, "Webhook");
  if (view.webhookId !== id) Object.assign(view, { webhookId: id, status: "", cursor: null, back: [] });
  const hookPath = `/webhooks/${enc(id)}`;
  const [hook, result] = await Promise.all([
    get(hookPath),
    get(`${hookPath}/deliveries${qs({ status: view.status, limit: view.limit, cursor: view.cursor })}`),
  ]);
  const rows = result.data;
  const nextCursor = result.pagination.nextCursor;
  const detail = h("div.delivery-detail");
  const reload = () => ctx.navigate(`#/webhooks/${enc(id)}`);
  async function show(delivery) {
    const full = await get(`${hookPath}/deliveries/${enc(delivery.id)}`);
    mount(detail, h("section.card.delivery", { "aria-label": "Delivery details" },
      h("div.row", h("h2", `${webhookEvent(full.eventType)} · ${full.eventId}`), h("span.spacer"), statusTag(full.status)),
      h("h3", "Body sent"),
      h("pre", pretty(full.payload)),
      h("h3", "Attempts"),
      attemptsTable(full.log, "Attempts")));
  }
  const columns = [
    ["Event", (d) => webhookEvent(d.eventType)],
    ["Status", (d) => statusTag(d.status)],
    ["Attempts", (d) => String(d.attempts)],
    ["Last answer", (d) => (d.lastError ? h("span", { class: d.status === "success" ? "" : "bad" }, d.lastError) : d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : "—")],
    ["Created", (d) => when(d.createdAt, true)],
    ["Next attempt", (d) => when(d.nextAttemptAt) || "—"],
    ["", (d) => h("div.row",
      actionButton("Details", () => show(d), { class: "secondary small", "aria-label": `Details of ${webhookEvent(d.eventType)} ${d.id}` }),
      actionButton("Redeliver", async () => {
        await post(`${hookPath}/deliveries/${enc(d.id)}/redeliver`);
        toast("Sent again");
        reload();
      }, { class: "small", "aria-label": `Redeliver ${webhookEvent(d.eventType)} ${d.id}` }))],
  ];
  const statusSelect = select(choices(DELIVERY_STATUS, ["", "Any status"]), view.status, {
    "aria-label": "Status filter",
    onchange: (e) => { Object.assign(view, { status: e.target.value, cursor: null, back: [] }); reload(); },
  });
  mount(page,
    pageHeader(hook.url, `${hook.description ? hook.description + " · " : ""}${hook.events.map(webhookEvent).join(", ")}`,
      h("a.button.secondary", { href: "#/webhooks" }, "All webhooks"),
      actionButton("Refresh", reload, { class: "secondary" })),
    h("h2", "Delivery log"),
    h("div.row.filters", statusSelect),
    table(columns, rows, "No deliveries yet: they appear when the chosen events happen.", "Deliveries"),
    pager(view, nextCursor, rows.length, reload),
    detail);
}

// Form submissions.

// Pages by cursor (any depth costs the same); `back` holds the cursors of earlier pages.
const subView = { status: "", agentId: "", cursor: null, back: [], shown: 0, limit: 50 };

/** The team's submissions, newest first. */
export async function renderSubmissions(ctx, page) {
  const result = await get(`/form-submissions${qs({ status: subView.status, agentId: subView.agentId, limit: subView.limit, cursor: subView.cursor })}`);
  const rows = result.submissions || [];
  const { total, nextCursor } = result.pagination || { total: rows.length, nextCursor: null };
  const agentName = (id) => (ctx.agents.find((a) => a.id === id) || {}).name || id;
  const columns = [
    ["Submitted", (s) => h("a", { href: `#/submissions/${enc(s.id)}` }, when(s.createdAt))],
    ["Form", (s) => s.toolName],
    ["Agent", (s) => agentName(s.agentId)],
    ["Status", (s) => statusTag(s.status, submissionStatus)],
    ["Fields", (s) => (s.fieldsCompleted || []).join(", ")],
    ["Attempts", (s) => String(s.webhookAttempts ?? 0)],
  ];
  const refresh = () => {
    Object.assign(subView, { cursor: null, back: [], shown: 0 });
    ctx.navigate("#/submissions");
  };
  const statusSelect = select(choices(SUBMISSION_STATUS, ["", "Any status"]), subView.status, { "aria-label": "Status filter", onchange: (e) => { subView.status = e.target.value; refresh(); } });
  const agentSelect = select([["", "All agents"], ...ctx.agents.map((a) => [a.id, a.name])], subView.agentId, { "aria-label": "Agent filter", onchange: (e) => { subView.agentId = e.target.value; refresh(); } });
  const to = subView.shown + rows.length;
  // Exports are per agent: the one filtered on, else the agent chosen in the menu.
  const exportAgent = ctx.agents.find((a) => a.id === (subView.agentId || ctx.agentId));
  const exportButton = (label, format) => exportAgent
    ? actionButton(label, async () => download(BASE + `/form-submissions/export${qs({ agentId: exportAgent.id, status: subView.status, format })}`),
      { class: "secondary", title: `The submissions of ${exportAgent.name}` })
    : null;
  mount(page,
    pageHeader("Form submissions", "Everything visitors submitted through form tools, with delivery status. An export covers one agent's submissions with the status filter.",
      exportButton("Export CSV", "csv"), exportButton("Export JSON Lines", "jsonl")),
    h("div.row.filters", statusSelect, agentSelect),
    table(columns, rows, "No submissions match."),
    pager(subView, nextCursor, rows.length, () => ctx.navigate("#/submissions"), h("span.muted", `${rows.length ? subView.shown + 1 : 0}–${to} of ${total}`)));
}

function cellText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function deliveryLog(deliveries) {
  if (!deliveries.length) return h("p.empty", "Nothing to deliver: this form has no webhook or post action.");
  return deliveries.map((d) => h("section.card.delivery",
    h("div.row",
      h("h3", d.type === "webhook" ? "Webhook" : `Post action: ${postAction(d.actionType)}`),
      h("span.spacer"),
      statusTag(d.status)),
    h("p.muted", `To ${d.target || "—"} · ${d.attempts} attempt${d.attempts === 1 ? "" : "s"}`,
      d.nextAttemptAt ? ` · next ${when(d.nextAttemptAt)}` : "",
      d.completedAt ? ` · done ${when(d.completedAt)}` : ""),
    d.lastError ? h("p.bad", d.lastError) : null,
    attemptsTable(d.log || [], null, "")));
}

/** One submission: its data, its status and the log of every delivery attempt. */
export async function renderSubmission(ctx, page, id) {
  draw(ctx, page, await get(`/form-submissions/${enc(id)}`));
}

function draw(ctx, page, sub) {
  const deliveries = sub.deliveries || [];
  const formRows = Object.entries(sub.formData || {});
  const canRedeliver = deliveries.some((d) => d.status === "failed");
  const redeliver = canRedeliver ? actionButton("Redeliver", async () => {
    const updated = await post(`/form-submissions/${enc(sub.id)}/redeliver`);
    toast("Failed deliveries tried again");
    draw(ctx, page, updated);
  }, { class: "secondary" }) : null;
  mount(page,
    pageHeader(`Submission of ${sub.toolName}`, `${when(sub.createdAt)} · ${executionMode(sub.executionMode)}`, h("a.button.secondary", { href: "#/submissions" }, "All submissions"), redeliver),
    h("p.submission-status", "Status: ", statusTag(sub.status, submissionStatus), sub.lastError ? h("span.bad", ` — ${sub.lastError}`) : null),
    h("p.muted", `Id ${sub.id}`, sub.conversationId ? " · conversation " : "", sub.conversationId ? h("a", { href: `#/conversations/${enc(sub.conversationId)}` }, sub.conversationId) : null),
    h("h2", "Data"),
    table([["Field", (r) => r[0]], ["Value", (r) => (typeof r[1] === "string" && r[1].startsWith("data:") ? `(file, ${r[1].length} characters)` : cellText(r[1]))]], formRows, "No data."),
    sub.clientResult ? [h("h2", "Client handler result"), h("pre", pretty(sub.clientResult))] : null,
    h("h2", "Delivery log"),
    deliveryLog(deliveries));
}

// ── Audit log (owner): who did what and when, filtered by action, page by page.

const AUDIT_ACTIONS = Object.keys(AUDIT_ACTION);
const auditView = { action: "", cursor: null, back: [], shown: 0, limit: 50 };

function who(actor) {
  const name = actor.name || actor.email || actor.userId || "—";
  return actor.email && actor.name ? `${actor.name} <${actor.email}>` : name;
}

function via(actor) {
  if (actor.via === "apiKey") return `API key ${actor.keyName || actor.keyId}`;
  return actorVia(actor.via);
}

// Details whose values are codes themselves, shown by their labels.
const VALUES = { events: webhookEvent, role, executionType: toolType };

function detailText(key, value) {
  const label = VALUES[key] || String;
  if (Array.isArray(value)) return value.map(label).join(", ");
  return value !== null && typeof value === "object" ? JSON.stringify(value) : label(value);
}

function details(entry) {
  return Object.entries(entry.details || {}).map(([k, v]) => `${words(k)}: ${detailText(k, v)}`).join("; ");
}

/** The team's audit log, newest first. */
export async function renderAuditLog(ctx, page) {
  if (!ctx.isOwner) {
    mount(page, pageHeader("Audit log"), h("p.empty", "Only the team owner reads the audit log."));
    return;
  }
  const result = await get(`/audit-log${qs({ action: auditView.action, limit: auditView.limit, cursor: auditView.cursor })}`);
  const reload = () => ctx.navigate("#/audit-log");
  const filter = select([["", "Every action"], ...AUDIT_ACTIONS.map((a) => [a, auditAction(a)])], auditView.action, {
    "aria-label": "Action filter",
    onchange: (e) => { Object.assign(auditView, { action: e.target.value, cursor: null, back: [] }); reload(); },
  });
  const nextCursor = result.pagination.nextCursor;
  // The key column (what and when) stays in auditView while a narrow screen scrolls the rest.
  const log = table([
    ["Action", (e) => [h("strong", auditAction(e.action)), h("br"), h("span.muted", when(e.createdAt, true))]],
    ["Who", (e) => who(e.actor)],
    ["Target", (e) => e.target.label || e.target.id || "—"],
    ["Details", (e) => details(e)],
    ["Via", (e) => via(e.actor)],
    ["Address", (e) => e.actor.ip || "—"],
  ], result.data, "Nothing recorded yet.", "Audit log");
  log.classList.add("key-first", "audit");
  mount(page,
    pageHeader("Audit log", "Keys, members, agents, tools, webhooks, exports and erasures: who did what, and when."),
    h("div.row.filters", filter),
    log,
    pager(auditView, nextCursor, result.data.length, reload));
}
