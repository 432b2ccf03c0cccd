// Audit log (owner): who did what and when, filtered by action, page by page.

import { get, qs } from "./api.js";
import { h, mount, select, table, when } from "./dom.js";
import { pageHeader } from "./forms.js";

export const ACTIONS = [
  "api_key.created", "api_key.revoked",
  "member.invited", "invitation.cancelled", "member.joined", "member.removed",
  "agent.created", "agent.deleted", "agent.retention_changed",
  "tool.created", "tool.deleted",
  "webhook.created", "webhook.deleted",
  "end_user.exported", "end_user.erased", "conversations.exported",
];
const view = { action: "", cursor: null, back: [], limit: 50 };

function who(actor) {
  const name = actor.name || actor.email || actor.userId || "—";
  return actor.email && actor.name ? `${actor.name} <${actor.email}>` : name;
}

function via(actor) {
  if (actor.via === "apiKey") return `API key ${actor.keyName || actor.keyId}`;
  return actor.via === "session" ? "dashboard" : actor.via;
}

function details(entry) {
  const parts = Object.entries(entry.details || {}).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
  return parts.join(", ");
}

/** The team's audit log, newest first. */
export async function renderAuditLog(ctx, page) {
  if (!ctx.isOwner) {
    mount(page, pageHeader("Audit log"), h("p", { class: "empty" }, "Only the team owner reads the audit log."));
    return;
  }
  const result = await get(`/audit-log${qs({ action: view.action, limit: view.limit, cursor: view.cursor })}`);
  const reload = () => ctx.navigate("#/audit-log");
  const filter = select([["", "Every action"], ...ACTIONS.map((a) => [a, a])], view.action, {
    "aria-label": "Action filter",
    onchange: (e) => { Object.assign(view, { action: e.target.value, cursor: null, back: [] }); reload(); },
  });
  const nextCursor = result.pagination.nextCursor;
  mount(page,
    pageHeader("Audit log", "Keys, members, agents, tools, webhooks, exports and erasures: who did what, and when."),
    h("div", { class: "row filters" }, filter),
    table([
      { label: "When", cell: (e) => when(e.createdAt) },
      { label: "Who", cell: (e) => who(e.actor) },
      { label: "Via", cell: (e) => via(e.actor) },
      { label: "Action", cell: (e) => h("code", {}, e.action) },
      { label: "Target", cell: (e) => e.target.label || e.target.id || "—" },
      { label: "Details", cell: (e) => details(e) },
      { label: "Address", cell: (e) => e.actor.ip || "—" },
    ], result.data, "Nothing recorded yet.", "Audit log"),
    h("div", { class: "row pager" },
      h("button", { type: "button", class: "secondary small", disabled: !view.back.length, onclick: () => { view.cursor = view.back.pop(); reload(); } }, "Previous"),
      h("button", { type: "button", class: "secondary small", disabled: !nextCursor, onclick: () => { view.back.push(view.cursor); view.cursor = nextCursor; reload(); } }, "Next")));
}
