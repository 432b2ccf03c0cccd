// Audit log (owner): who did what and when, filtered by action, page by page.

import { get, qs } from "./api.js";
import { h, mount, pager, select, table, when } from "./dom.js";
import { pageHeader } from "./forms.js";
import { AUDIT_ACTION, actorVia, auditAction, role, toolType, webhookEvent, words } from "./labels.js";

export const ACTIONS = Object.keys(AUDIT_ACTION);
const view = { action: "", cursor: null, back: [], shown: 0, limit: 50 };

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

function detail(key, value) {
  const label = VALUES[key] || String;
  if (Array.isArray(value)) return value.map(label).join(", ");
  return value !== null && typeof value === "object" ? JSON.stringify(value) : label(value);
}

function details(entry) {
  return Object.entries(entry.details || {}).map(([k, v]) => `${words(k)}: ${detail(k, v)}`).join("; ");
}

/** The team's audit log, newest first. */
export async function renderAuditLog(ctx, page) {
  if (!ctx.isOwner) {
    mount(page, pageHeader("Audit log"), h("p.empty", "Only the team owner reads the audit log."));
    return;
  }
  const result = await get(`/audit-log${qs({ action: view.action, limit: view.limit, cursor: view.cursor })}`);
  const reload = () => ctx.navigate("#/audit-log");
  const filter = select([["", "Every action"], ...ACTIONS.map((a) => [a, auditAction(a)])], view.action, {
    "aria-label": "Action filter",
    onchange: (e) => { Object.assign(view, { action: e.target.value, cursor: null, back: [] }); reload(); },
  });
  const nextCursor = result.pagination.nextCursor;
  // The key column (what and when) stays in view while a narrow screen scrolls the rest.
  const log = table([
    { label: "Action", cell: (e) => [h("strong", auditAction(e.action)), h("br"), h("span.muted", when(e.createdAt, true))] },
    { label: "Who", cell: (e) => who(e.actor) },
    { label: "Target", cell: (e) => e.target.label || e.target.id || "—" },
    { label: "Details", cell: (e) => details(e) },
    { label: "Via", cell: (e) => via(e.actor) },
    { label: "Address", cell: (e) => e.actor.ip || "—" },
  ], result.data, "Nothing recorded yet.", "Audit log");
  log.classList.add("key-first", "audit");
  mount(page,
    pageHeader("Audit log", "Keys, members, agents, tools, webhooks, exports and erasures: who did what, and when."),
    h("div.row.filters", filter),
    log,
    pager(view, nextCursor, result.data.length, reload));
}
