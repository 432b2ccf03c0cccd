// Inbox: conversations waiting for a person or with one, live; take, reply, hand back, close.

import { BASE, get, patch, post, qs } from "./api.js";
import { h, mount, table, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";
import { conversationStatus } from "./labels.js";
import { visitor } from "./page-conversations.js";

/** A live event stream that ends when the page is left. */
function live(ctx, path, onEvent, names) {
  const source = new EventSource(BASE + path, { withCredentials: true });
  for (const name of names) source.addEventListener(name, (e) => onEvent(name, JSON.parse(e.data)));
  ctx.onLeave(() => source.close());
  return source;
}

function statusTag(status) {
  return h("span", { class: `tag status-${status}` }, conversationStatus(status));
}

async function openConversations(ctx) {
  const lists = await Promise.all(ctx.agents.flatMap((agent) => ["waiting", "human"].map((status) =>
    get(`/conversations${qs({ agentId: agent.id, status, limit: 100 })}`).then((r) => r.data.map((c) => ({ ...c, agentName: agent.name }))))));
  // Waiting first (oldest wait first), then those with a person.
  return lists.flat().sort((a, b) => (a.status === b.status ? a.updatedAt.localeCompare(b.updatedAt) : a.status === "waiting" ? -1 : 1));
}

/** The team's open handoffs, updated as they happen. */
export async function renderInbox(ctx, page) {
  await ctx.refreshAgents();
  const me = ctx.team.members.find((m) => m.id === ctx.session.user.id);
  const listHolder = h("div", { "aria-live": "polite" });
  const columns = [
    { label: "Conversation", cell: (c) => h("a", { href: `#/inbox/${encodeURIComponent(c.id)}` }, c.title || "(untitled)") },
    { label: "Agent", cell: (c) => c.agentName },
    { label: "Visitor", cell: (c) => (c.user ? h("span", {}, visitor(c.user, true)) : "anonymous") },
    { label: "Status", cell: (c) => statusTag(c.status) },
    { label: "Assignee", cell: (c) => (c.assignee ? c.assignee.name : "—") },
    { label: "Updated", cell: (c) => when(c.updatedAt) },
  ];
  async function refresh() {
    const rows = await openConversations(ctx);
    mount(listHolder, table(columns, rows, "Nobody is waiting for a person.", "Open handoffs"));
  }
  let pending = null;
  live(ctx, "/inbox/events", () => {
    clearTimeout(pending);
    pending = setTimeout(refresh, 150);
  }, ["conversation"]);
  const notify = h("input", { type: "checkbox", id: "notify-handoffs", checked: Boolean(me && me.notifyHandoffs) });
  notify.addEventListener("change", async () => {
    await patch("/team/members/me", { notifyHandoffs: notify.checked });
    toast(notify.checked ? "You will get an e-mail for each handoff" : "No more handoff e-mails");
  });
  await refresh();
  mount(page,
    pageHeader("Inbox", "Visitors who asked for a person, live. Turn handoff on in an agent's settings."),
    h("p", {}, h("label", { for: "notify-handoffs" }, notify, " E-mail me when a visitor asks for a person")),
    listHolder);
}

function authorOf(m) {
  if (m.author && m.author.type === "human") return m.author.name || "Team";
  return m.role === "user" ? "Visitor" : "Agent";
}

/** One conversation: its messages live, and the member's controls. */
export async function renderInboxConversation(ctx, page, id) {
  const path = `/conversations/${encodeURIComponent(id)}`;
  const conv = await get(path);
  const seen = new Set(conv.messages.map((m) => m.id));
  const log = h("ol", { class: "transcript", "aria-label": "Messages", "aria-live": "polite" });
  const head = h("p", { class: "muted" });
  function addMessage(m) {
    seen.add(m.id);
    log.append(h("li", { class: `msg ${m.role} author-${m.author ? m.author.type : "ai"}` },
      h("strong", {}, authorOf(m)), " ", h("span", { class: "muted" }, when(m.createdAt)),
      h("div", { class: "content" }, m.content)));
  }
  function showStatus(status, assignee) {
    conv.status = status;
    conv.assignee = assignee;
    mount(head, statusTag(status), assignee ? ` · ${assignee.name}` : "");
  }
  conv.messages.forEach(addMessage);
  showStatus(conv.status, conv.assignee);
  live(ctx, `${path}/events`, (name, data) => {
    if (name === "status") showStatus(data.status, data.assignee);
    else if (name === "message" && !seen.has(data.message.id)) addMessage(data.message);
  }, ["status", "message"]);
  const action = (label, route, done) => actionButton(label, async () => {
    const state = await post(`${path}/${route}`, {});
    showStatus(state.status, state.assignee);
    toast(done);
  }, { class: "secondary" });
  const reply = onSubmit(h("form", { class: "stack card", "aria-label": "Reply" },
    h("label", { for: "reply-text" }, "Reply to the visitor"),
    h("textarea", { id: "reply-text", name: "content", rows: "3", required: true }),
    h("button", { type: "submit" }, "Send reply")), async (data) => {
    const text = String(data.get("content")).trim();
    if (!text) throw new Error("content: write a reply first");
    const sent = await post(`${path}/messages`, { content: text });
    if (!seen.has(sent.id)) addMessage(sent);
    reply.reset();
  });
  mount(page,
    pageHeader(conv.title || "(untitled)", conv.user ? null : "Anonymous visitor",
      action("Take it", "assign", "You have the conversation"),
      action("Hand back to the agent", "release", "The agent answers again"),
      action("Close", "close", "Conversation closed"),
      h("a", { class: "button secondary", href: "#/inbox" }, "Back to the inbox")),
    conv.user ? h("p", {}, visitor(conv.user)) : null,
    head,
    log,
    reply);
}
