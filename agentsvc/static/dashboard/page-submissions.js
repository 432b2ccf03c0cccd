// Form submissions: filter by status and agent, read one with its delivery log, redeliver.

import { BASE, get, post, qs } from "./api.js";
import { download, h, mount, pager, pretty, select, table, toast, when } from "./dom.js";
import { actionButton, pageHeader } from "./forms.js";
import { SUBMISSION_STATUS, choices, deliveryStatus, executionMode, postAction, submissionStatus } from "./labels.js";
import { attemptsTable } from "./page-webhooks.js";

const FAILED = new Set(["webhook_failed", "client_failed", "failed"]);
// Pages by cursor (any depth costs the same); `back` holds the cursors of earlier pages.
const view = { status: "", agentId: "", cursor: null, back: [], shown: 0, limit: 50 };

function statusTag(status, label = submissionStatus) {
  const kind = FAILED.has(status) ? "bad" : status === "pending" ? "warn" : "good";
  return h("span", { class: `tag ${kind}` }, label(status));
}

/** The team's submissions, newest first. */
export async function renderSubmissions(ctx, page) {
  const result = await get(`/form-submissions${qs({ status: view.status, agentId: view.agentId, limit: view.limit, cursor: view.cursor })}`);
  const rows = result.submissions || [];
  const { total, nextCursor } = result.pagination || { total: rows.length, nextCursor: null };
  const agentName = (id) => (ctx.agents.find((a) => a.id === id) || {}).name || id;
  const columns = [
    { label: "Submitted", cell: (s) => h("a", { href: `#/submissions/${encodeURIComponent(s.id)}` }, when(s.createdAt)) },
    { label: "Form", cell: (s) => s.toolName },
    { label: "Agent", cell: (s) => agentName(s.agentId) },
    { label: "Status", cell: (s) => statusTag(s.status) },
    { label: "Fields", cell: (s) => (s.fieldsCompleted || []).join(", ") },
    { label: "Attempts", cell: (s) => String(s.webhookAttempts ?? 0) },
  ];
  const refresh = () => {
    Object.assign(view, { cursor: null, back: [], shown: 0 });
    ctx.navigate("#/submissions");
  };
  const statusSelect = select(choices(SUBMISSION_STATUS, ["", "Any status"]), view.status, { "aria-label": "Status filter", onchange: (e) => { view.status = e.target.value; refresh(); } });
  const agentSelect = select([["", "All agents"], ...ctx.agents.map((a) => [a.id, a.name])], view.agentId, { "aria-label": "Agent filter", onchange: (e) => { view.agentId = e.target.value; refresh(); } });
  const to = view.shown + rows.length;
  // Exports are per agent: the one filtered on, else the agent chosen in the menu.
  const exportAgent = ctx.agents.find((a) => a.id === (view.agentId || ctx.agentId));
  const exportButton = (label, format) => exportAgent
    ? actionButton(label, async () => download(BASE + `/form-submissions/export${qs({ agentId: exportAgent.id, status: view.status, format })}`),
      { class: "secondary", title: `The submissions of ${exportAgent.name}` })
    : null;
  mount(page,
    pageHeader("Form submissions", "Everything visitors submitted through form tools, with delivery status. An export covers one agent's submissions with the status filter.",
      exportButton("Export CSV", "csv"), exportButton("Export JSON Lines", "jsonl")),
    h("div", { class: "row filters" }, statusSelect, agentSelect),
    table(columns, rows, "No submissions match."),
    pager(view, nextCursor, rows.length, () => ctx.navigate("#/submissions"), h("span", { class: "muted" }, `${rows.length ? view.shown + 1 : 0}–${to} of ${total}`)));
}

function cellText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function deliveryLog(deliveries) {
  if (!deliveries.length) return h("p", { class: "empty" }, "Nothing to deliver: this form has no webhook or post action.");
  return deliveries.map((d) => h("section", { class: "card delivery" },
    h("div", { class: "row" },
      h("h3", {}, d.type === "webhook" ? "Webhook" : `Post action: ${postAction(d.actionType)}`),
      h("span", { class: "spacer" }),
      statusTag(d.status, deliveryStatus)),
    h("p", { class: "muted" }, `To ${d.target || "—"} · ${d.attempts} attempt${d.attempts === 1 ? "" : "s"}`,
      d.nextAttemptAt ? ` · next ${when(d.nextAttemptAt)}` : "",
      d.completedAt ? ` · done ${when(d.completedAt)}` : ""),
    d.lastError ? h("p", { class: "bad" }, d.lastError) : null,
    attemptsTable(d.log || [], null, "")));
}

/** One submission: its data, its status and the log of every delivery attempt. */
export async function renderSubmission(ctx, page, id) {
  draw(ctx, page, await get(`/form-submissions/${encodeURIComponent(id)}`));
}

function draw(ctx, page, sub) {
  const deliveries = sub.deliveries || [];
  const formRows = Object.entries(sub.formData || {});
  const canRedeliver = deliveries.some((d) => d.status === "failed");
  const redeliver = canRedeliver ? actionButton("Redeliver", async () => {
    const updated = await post(`/form-submissions/${encodeURIComponent(sub.id)}/redeliver`);
    toast("Failed deliveries tried again");
    draw(ctx, page, updated);
  }, { class: "secondary" }) : null;
  mount(page,
    pageHeader(`Submission of ${sub.toolName}`, `${when(sub.createdAt)} · ${executionMode(sub.executionMode)}`, h("a", { class: "button secondary", href: "#/submissions" }, "All submissions"), redeliver),
    h("p", { class: "submission-status" }, "Status: ", statusTag(sub.status), sub.lastError ? h("span", { class: "bad" }, ` — ${sub.lastError}`) : null),
    h("p", { class: "muted" }, `Id ${sub.id}`, sub.conversationId ? " · conversation " : "", sub.conversationId ? h("a", { href: `#/conversations/${encodeURIComponent(sub.conversationId)}` }, sub.conversationId) : null),
    h("h2", {}, "Data"),
    table([{ label: "Field", cell: (r) => r[0] }, { label: "Value", cell: (r) => (typeof r[1] === "string" && r[1].startsWith("data:") ? `(file, ${r[1].length} characters)` : cellText(r[1])) }], formRows, "No data."),
    sub.clientResult ? [h("h2", {}, "Client handler result"), h("pre", {}, pretty(sub.clientResult))] : null,
    h("h2", {}, "Delivery log"),
    deliveryLog(deliveries));
}
