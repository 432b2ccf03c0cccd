// Conversations: search and filter (words, feedback, days, visitor, status, agent), browse
// page by page, read, delete, and download the filtered conversations (CSV or JSON Lines).

import { BASE, del, enc, get, qs } from "./api.js";
import { button, download, h, mount, pager, pretty, select, table, toast, when } from "./dom.js";
import { actionButton, deleteButton, pageHeader } from "./forms.js";
import { CONVERSATION_STATUS, choices, messageStatus } from "./labels.js";
import { authorOf, byTime, eventText, files, isNote, live, NOTE_LABEL } from "./page-inbox.js";

const FILTERS = [["", "All conversations"], ["up", "With a 👍 rating"], ["down", "With a 👎 rating"], ["any", "With any rating"], ["flagged", "Flagged by a guardrail"]];
const STATUSES = choices(CONVERSATION_STATUS, ["", "Any status"]);
// Pages by cursor (any depth costs the same); `back` holds the cursors of earlier pages.
// The filters are the API's own (GET /conversations), kept while the page is left.
const view = { cursor: null, back: [], shown: 0, limit: 20, feedback: "", q: "", from: "", to: "", userId: "", status: "" };

function firstPage() {
  Object.assign(view, { cursor: null, back: [], shown: 0 });
}

/** The list's filters as query parameters (empty ones left out by `qs`). */
function filters() {
  const flagged = view.feedback === "flagged";
  return { q: view.q, rating: flagged ? "" : view.feedback, flagged: flagged ? "true" : "", from: view.from, to: view.to, userId: view.userId, status: view.status };
}

const details = (c) => get(`/conversations/${enc(c.id)}`);

const UNVERIFIED_HINT = "Declared by the visitor's browser, not signed by your site (see Signed identity)";

/** A field of the visitor, marked "unverified" when the site did not sign it. */
function field(value, verified) {
  return [value, verified ? null : [" ", h("span.tag.warn", { title: UNVERIFIED_HINT }, "unverified")]];
}

/** Who the visitor was: e-mail, name and id, each marked when unverified. */
export function visitor(user, short = false) {
  // verifiedBy userHash signs the id only; userToken and apiKey vouch for every field.
  const idVerified = Boolean(user.verifiedBy);
  const profileVerified = Boolean(user.verified);
  if (short) {
    if (user.email || user.name) return field(user.email || user.name, profileVerified);
    return field(user.id, idVerified);
  }
  const parts = [];
  if (user.name) parts.push(field(user.name, profileVerified));
  if (user.email) parts.push(field(user.email, profileVerified));
  if (user.id) parts.push(field(user.id, idVerified));
  return parts.flatMap((p, i) => (i ? [" · ", p] : [p]));
}

/** The search and filter form: applied on submit (and at once for the select boxes). */
function filterForm(ctx) {
  const apply = (e) => {
    if (e) e.preventDefault();
    const data = new FormData(form);
    for (const key of ["q", "from", "to", "userId"]) view[key] = String(data.get(key) || "").trim();
    firstPage();
    ctx.navigate("#/conversations");
  };
  const changed = (key) => (e) => {
    view[key] = e.target.value;
    firstPage();
    ctx.navigate("#/conversations");
  };
  const agentSelect = select(ctx.agents.map((a) => [a.id, a.name]), ctx.agentId, { "aria-label": "Agent filter", onchange: (e) => {
    ctx.setAgent(e.target.value);
    firstPage();
    ctx.navigate("#/conversations");
  } });
  const labelled = (label, control) => h("div.field", h("label", { for: control.id }, label), control);
  const form = h("form.card.filters-form", { role: "search", "aria-label": "Search conversations", onsubmit: apply },
    h("div.row",
      labelled("Search messages", h("input", { id: "conv-q", name: "q", type: "search", value: view.q, maxlength: 500, placeholder: "Words in any message" })),
      labelled("From", h("input", { id: "conv-from", name: "from", type: "date", value: view.from })),
      labelled("To", h("input", { id: "conv-to", name: "to", type: "date", value: view.to })),
      labelled("Visitor id", h("input", { id: "conv-user", name: "userId", value: view.userId, maxlength: 200, placeholder: "userId" }))),
    h("div.row",
      select(FILTERS, view.feedback, { "aria-label": "Feedback filter", onchange: changed("feedback") }),
      select(STATUSES, view.status, { "aria-label": "Status filter", onchange: changed("status") }),
      agentSelect,
      h("span.spacer"),
      button("Clear", () => {
        Object.assign(view, { q: "", from: "", to: "", userId: "", status: "", feedback: "" });
        firstPage();
        ctx.navigate("#/conversations");
      }),
      h("button", { type: "submit" }, "Search")));
  return form;
}

/** The agent's conversations. */
export async function renderConversations(ctx, page) {
  const agent = ctx.agent;
  const result = await get(`/conversations${qs({ agentId: agent.id, limit: view.limit, cursor: view.cursor, ...filters() })}`);
  const rows = result.data;
  const { total, nextCursor, totalCapped } = result.pagination;
  const count = rows.length;
  const columns = [
    ["Title", (c) => [h("a", { href: `#/conversations/${enc(c.id)}` }, c.title || "(untitled)"), c.flaggedAt ? [" ", h("span.tag.warn", "Flagged")] : null]],
    ["Visitor", (c) => (c.user ? h("span", visitor(c.user, true)) : c.sessionId ? "anonymous" : "API / dashboard")],
    ["Messages", (c) => String(c.messageCount)],
    ["Feedback", (c) => (c.ratings.up || c.ratings.down ? `👍 ${c.ratings.up} · 👎 ${c.ratings.down}` : "")],
    ["Updated", (c) => when(c.updatedAt)],
  ];
  const size = select([["20", "20 per page"], ["50", "50 per page"], ["100", "100 per page"]], String(view.limit), { "aria-label": "Page size", onchange: (e) => {
    view.limit = Number(e.target.value);
    firstPage();
    ctx.navigate("#/conversations");
  } });
  // A file the server streams: the browser saves it under the server's name.
  const exportPath = (format) => `${BASE}/conversations/export${qs({ agentId: agent.id, format, ...filters() })}`;
  const exportCsv = actionButton("Export CSV", async () => {
    download(exportPath("csv"));
    toast("The download starts: one row per message of the conversations listed");
  }, { class: "secondary" });
  const exportJsonl = actionButton("Export JSON Lines", async () => download(exportPath("jsonl")), { class: "secondary" });
  const from = count ? view.shown + 1 : 0;
  const to = view.shown + count;
  const filtered = Object.values(filters()).some(Boolean);
  const pages = pager(view, nextCursor, count, () => ctx.navigate("#/conversations"), [h("span.muted", `${from}–${to} of ${total}${totalCapped ? "+" : ""}`), size]);
  mount(page,
    pageHeader(`Conversations of ${agent.name}`, "Newest first. Search words in any form (refunds finds refund); the filters combine, and the export follows them.", exportCsv, exportJsonl),
    filterForm(ctx),
    table(columns, rows, filtered ? "No conversation matches these filters." : "No conversations yet: try the chat preview.", "Conversations"),
    pages);
}

/** One conversation: its messages (named by who wrote them), private notes, handoff events. */
export async function renderConversation(ctx, page, id) {
  const conv = await details({ id });
  const agent = ctx.agents.find((a) => a.id === conv.agentId);
  const byId = new Map();
  const entries = byTime(conv.messages, conv.notes).map((m) => {
    const note = isNote(m);
    const el = h("article", { class: note ? "msg note" : `msg ${m.role}` },
      note ? h("div.note-label", NOTE_LABEL) : null,
      h("div.meta",
        h("span.who", authorOf(m, agent && agent.name)),
        h("span.muted", when(m.createdAt)),
        m.rating ? h("span", { class: `rating ${m.rating}`, "aria-label": `Rated ${m.rating}` }, m.rating === "up" ? "👍" : "👎") : null,
        m.status && m.status !== "complete" ? h("span.tag.bad", messageStatus(m.status)) : null,
        m.unanswered ? h("span.tag.warn", { title: "The answer found nothing to answer with" }, "Unanswered") : null,
        (m.sources || []).some((src) => src.answerId) ? h("span.tag.good", "Curated answer") : null),
      (m.toolCalls || []).map((t) => h("details", { class: `tool-note ${t.isError ? "error" : ""}` },
        h("summary", `Tool ${t.toolName}${t.isError ? " (error)" : ""}`),
        h("pre", `input: ${pretty(t.input)}\noutput: ${typeof t.output === "string" ? t.output : pretty(t.output)}`))),
      h("div.text", m.content), files(id, m));
    byId.set(m.id, el);
    return el;
  });
  const timeline = h("div.transcript.read", { role: "log", "aria-label": "Messages" }, entries.length ? entries : h("p.empty", "No messages."));
  // Handoff events: the conversation's event log replayed from its start, among the messages.
  let after = null;
  live(ctx, `/conversations/${enc(id)}/events?lastEventId=0`, (name, data, eventId) => {
    if (name === "message") after = byId.get(data.message.id) || after;
    if (name !== "status" || !eventId) return; // the first status is the current one, not an event
    const line = h("p.event", eventText(data.status, data.assignee));
    if (after) after.after(line);
    else timeline.prepend(line);
    after = line;
  }, ["status", "message"]);
  const remove = deleteButton("Delete conversation", "Delete this conversation and its messages?", "Delete",
    `/conversations/${enc(id)}`, "Conversation deleted", () => ctx.navigate("#/conversations"));
  const who = conv.user ? visitor(conv.user) : conv.sessionId ? `anonymous session ${conv.sessionId}` : "API or dashboard";
  // A guardrail replaced an answer here: a member looks, then clears the flag.
  const flag = conv.flaggedAt ? h("p.notice", `Flagged for review ${when(conv.flaggedAt)}: a guardrail replaced an answer (see its note). `,
    actionButton("Mark reviewed", async () => {
      await del(`/conversations/${enc(id)}/flag`);
      toast("Marked reviewed");
      flag.remove();
    }, { class: "small" })) : null;
  mount(page,
    pageHeader(conv.title || "(untitled)", [who, ` · started ${when(conv.createdAt)}`], h("a.button.secondary", { href: "#/conversations" }, "All conversations"), remove),
    flag,
    timeline);
}


