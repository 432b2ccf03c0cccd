// Conversations: browse with pagination, filter by feedback, read, delete, export CSV.

import { del, get, qs } from "./api.js";
import { confirmDialog, h, mount, pretty, select, table, toast, when } from "./dom.js";
import { actionButton, pageHeader } from "./forms.js";

const FILTERS = [["", "All conversations"], ["up", "With a 👍 rating"], ["down", "With a 👎 rating"], ["any", "With any rating"]];
// Pages by cursor (any depth costs the same); `back` holds the cursors of earlier pages.
const view = { cursor: null, back: [], shown: 0, limit: 20, feedback: "" };

function firstPage() {
  Object.assign(view, { cursor: null, back: [], shown: 0 });
}

/** Fetch many things with at most `width` requests in flight. */
async function pooled(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  });
  await Promise.all(workers);
  return out;
}

function ratingsOf(conv) {
  const ratings = conv.messages.map((m) => m.rating).filter(Boolean);
  return { up: ratings.filter((r) => r === "up").length, down: ratings.filter((r) => r === "down").length };
}

function matches(conv, filter) {
  const r = ratingsOf(conv);
  if (filter === "up") return r.up > 0;
  if (filter === "down") return r.down > 0;
  if (filter === "any") return r.up + r.down > 0;
  return true;
}

const details = (c) => get(`/conversations/${encodeURIComponent(c.id)}`);

/** Quote a CSV cell (RFC 4180), and defuse cells a spreadsheet would run as a formula. */
export function csvCell(value) {
  let text = value === null || value === undefined ? "" : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = "'" + text;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The CSV of conversations with their messages, one row per message. */
export function conversationsCsv(conversations) {
  const header = ["conversationId", "title", "userEmail", "conversationCreatedAt", "messageId", "role", "content", "rating", "messageCreatedAt", "userVerified"];
  const rows = [header];
  for (const c of conversations) {
    const verified = c.user ? String(Boolean(c.user.verified)) : "";
    for (const m of c.messages) {
      rows.push([c.id, c.title, c.user ? c.user.email : "", c.createdAt, m.id, m.role, m.content, m.rating || "", m.createdAt, verified]);
    }
  }
  return rows.map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
}

const UNVERIFIED_HINT = "Declared by the visitor's browser, not signed by your site (see Signed identity)";

/** A field of the visitor, marked "unverified" when the site did not sign it. */
function field(value, verified) {
  return [value, verified ? null : [" ", h("span", { class: "tag warn", title: UNVERIFIED_HINT }, "unverified")]];
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

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const a = h("a", { href: url, download: name, class: "offscreen" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** The agent's conversations. */
export async function renderConversations(ctx, page) {
  const agent = ctx.agent;
  const result = await get(`/conversations${qs({ agentId: agent.id, limit: view.limit, cursor: view.cursor })}`);
  let rows = result.data;
  const { total, nextCursor } = result.pagination;
  const count = rows.length;
  const ratingCell = new Map();
  if (view.feedback) {
    const full = await pooled(rows, 6, details);
    full.forEach((c) => ratingCell.set(c.id, ratingsOf(c)));
    rows = full.filter((c) => matches(c, view.feedback));
  }
  const columns = [
    { label: "Title", cell: (c) => h("a", { href: `#/conversations/${encodeURIComponent(c.id)}` }, c.title || "(untitled)") },
    { label: "Visitor", cell: (c) => (c.user ? h("span", {}, visitor(c.user, true)) : c.sessionId ? "anonymous" : "API / dashboard") },
    { label: "Messages", cell: (c) => String(c.messageCount ?? c.messages.length) },
    ...(view.feedback ? [{ label: "Feedback", cell: (c) => `👍 ${ratingCell.get(c.id).up} · 👎 ${ratingCell.get(c.id).down}` }] : []),
    { label: "Updated", cell: (c) => when(c.updatedAt) },
  ];
  const filter = select(FILTERS, view.feedback, { "aria-label": "Feedback filter", onchange: (e) => {
    view.feedback = e.target.value;
    firstPage();
    ctx.navigate("#/conversations");
  } });
  const size = select([["20", "20 per page"], ["50", "50 per page"], ["100", "100 per page"]], String(view.limit), { "aria-label": "Page size", onchange: (e) => {
    view.limit = Number(e.target.value);
    firstPage();
    ctx.navigate("#/conversations");
  } });
  const exportButton = actionButton("Export CSV", async (button) => {
    button.textContent = "Exporting…";
    const all = [];
    for (let cursor = null; ; ) {
      const chunk = await get(`/conversations${qs({ agentId: agent.id, limit: 100, cursor })}`);
      all.push(...chunk.data);
      cursor = chunk.pagination.nextCursor;
      if (!cursor) break;
    }
    const full = (await pooled(all, 6, details)).filter((c) => matches(c, view.feedback));
    download(`conversations-${agent.slug}.csv`, conversationsCsv(full));
    button.textContent = "Export CSV";
    toast(`Exported ${full.length} conversations`);
  }, { class: "secondary" });
  const from = count ? view.shown + 1 : 0;
  const to = view.shown + count;
  const pager = h("div", { class: "row pager" },
    h("button", { type: "button", class: "secondary small", disabled: !view.back.length, onclick: () => {
      view.cursor = view.back.pop();
      view.shown = Math.max(0, view.shown - view.limit);
      ctx.navigate("#/conversations");
    } }, "Previous"),
    h("span", { class: "muted" }, `${from}–${to} of ${total}`),
    h("button", { type: "button", class: "secondary small", disabled: !nextCursor, onclick: () => {
      view.back.push(view.cursor);
      view.cursor = nextCursor;
      view.shown += count;
      ctx.navigate("#/conversations");
    } }, "Next"));
  mount(page,
    pageHeader(`Conversations of ${agent.name}`, "Newest first. The feedback filter applies to the page shown; the export covers every page.", exportButton),
    h("div", { class: "row filters" }, filter, size),
    table(columns, rows, view.feedback ? "No conversation on this page has that feedback." : "No conversations yet: try the chat preview."),
    pager);
}

/** One conversation with its messages, ratings and tool calls. */
export async function renderConversation(ctx, page, id) {
  const conv = await details({ id });
  const messages = conv.messages.map((m) => h("article", { class: `msg ${m.role}` },
    h("div", { class: "meta" },
      h("span", { class: "who" }, m.role === "user" ? "Visitor" : "Agent"),
      h("span", { class: "muted" }, when(m.createdAt)),
      m.rating ? h("span", { class: `rating ${m.rating}`, "aria-label": `Rated ${m.rating}` }, m.rating === "up" ? "👍" : "👎") : null,
      m.status && m.status !== "complete" ? h("span", { class: "tag bad" }, m.status) : null),
    (m.toolCalls || []).map((t) => h("details", { class: `tool-note ${t.isError ? "error" : ""}` },
      h("summary", {}, `Tool ${t.toolName}${t.isError ? " (error)" : ""}`),
      h("pre", {}, `input: ${pretty(t.input)}\noutput: ${typeof t.output === "string" ? t.output : pretty(t.output)}`))),
    h("div", { class: "text" }, m.content)));
  const remove = actionButton("Delete conversation", async () => {
    if (!(await confirmDialog("Delete this conversation and its messages?", "Delete"))) return;
    await del(`/conversations/${encodeURIComponent(id)}`);
    toast("Conversation deleted");
    ctx.navigate("#/conversations");
  }, { class: "danger" });
  const who = conv.user ? visitor(conv.user) : conv.sessionId ? `anonymous session ${conv.sessionId}` : "API or dashboard";
  mount(page,
    pageHeader(conv.title || "(untitled)", [who, ` · started ${when(conv.createdAt)}`], h("a", { class: "button secondary", href: "#/conversations" }, "All conversations"), remove),
    h("div", { class: "transcript read", role: "log", "aria-label": "Messages" }, messages.length ? messages : h("p", { class: "empty" }, "No messages.")));
}


