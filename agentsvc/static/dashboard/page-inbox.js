// Inbox: the team's open conversations by view, searched, live; a desktop notification and
// a beep for each new waiting one, as the member chose; and one conversation of it, below.

import { BASE, describe, enc, get, post, qs } from "./api.js";
import { avatar, button, field, h, mount, parseJsonField, pretty, select, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";
import { conversationStatus, localeName } from "./labels.js";

const VIEWS = [["all", "All"], ["mine", "Mine"], ["unassigned", "Unassigned"], ["waiting", "Waiting"]];
/** The list as last shown (j/k in a conversation follow `ids`). */
export const inbox = { view: "all", q: "", ids: [] };

/** A live event stream that ends when the page is left. */
export function live(ctx, path, onEvent, names) {
  const source = new EventSource(BASE + path, { withCredentials: true });
  for (const name of names) source.addEventListener(name, (e) => onEvent(name, JSON.parse(e.data), e.lastEventId));
  ctx.onLeave(() => source.close());
  return source;
}

export const statusTag = (status) => h("span", { class: `tag status-${status}` }, conversationStatus(status));

/** How long since `iso`, in words: "under a minute", "4 min", "2 h 5 min", "3 days". */
export function waited(iso) {
  const min = Math.floor((Date.now() - Date.parse(iso)) / 60000);
  if (!(min >= 1)) return "under a minute";
  if (min < 60) return `${min} min`;
  if (min < 1440) return `${Math.floor(min / 60)} h` + (min % 60 ? ` ${min % 60} min` : "");
  return min < 2880 ? "1 day" : `${Math.floor(min / 1440)} days`;
}

/** Keys typed in a field are text, not shortcuts. */
export const typing = (e) => e.ctrlKey || e.metaKey || e.altKey || Boolean(e.target.closest("input, textarea, select, [contenteditable]"));

/** The signed-in member (their notification choices). */
export const me = (ctx) => ctx.team.members.find((m) => m.id === ctx.session.user.id) || {};

let audio = null;

function beep() {
  try {
    audio = audio || new AudioContext();
    const osc = audio.createOscillator();
    osc.frequency.value = 880;
    osc.connect(audio.destination);
    osc.start();
    osc.stop(audio.currentTime + 0.18);
  } catch {
    /* no sound on this browser */
  }
}

/** Follow the team's inbox: `changed` on every event and each time the stream (re)opens
 *  (what happened before it was followed is then read again); a notification and a beep
 *  (as chosen on the Profile page) when a conversation starts waiting. */
export function watchInbox(ctx, changed) {
  const who = me(ctx);
  // Sound plays only after a gesture: make the audio context on one.
  const prime = () => { if (who.notifySound && !audio) audio = new AudioContext(); };
  document.addEventListener("pointerdown", prime, { once: true });
  ctx.onLeave(() => document.removeEventListener("pointerdown", prime));
  const source = live(ctx, "/inbox/events", (name, e) => {
    changed(e);
    if (e.kind !== "status" || e.status !== "waiting") return;
    if (who.notifySound) beep();
    if (who.notifyBrowser && window.Notification && Notification.permission === "granted") {
      const agent = ctx.agents.find((a) => a.id === e.agentId);
      const note = new Notification("A visitor is waiting for a person", { body: agent ? `Agent: ${agent.name}` : "", tag: e.conversationId });
      note.onclick = () => {
        window.focus();
        ctx.navigate(`#/inbox/${enc(e.conversationId)}`);
      };
    }
  }, ["conversation"]);
  source.addEventListener("open", () => changed(null));
}

/** "Turn on desktop notifications", while the browser has not asked. */
function permissionButton(ctx) {
  if (!me(ctx).notifyBrowser || !window.Notification || Notification.permission !== "default") return null;
  return actionButton("Turn on desktop notifications", async (button) => {
    await Notification.requestPermission();
    button.hidden = true;
  }, { class: "secondary" });
}

const visitorName = (v) => (v && (v.name || v.email)) || "Anonymous visitor";

function row(c) {
  const since = c.status === "waiting" && c.waitingSince;
  return h("tr",
    h("td",
      h("a", { href: `#/inbox/${enc(c.id)}` }, c.title || "(untitled)"),
      c.lastMessage ? h("div.muted.preview", c.lastMessage.preview) : null),
    h("td", visitorName(c.visitor)),
    h("td", c.agentName),
    h("td", statusTag(c.status), since ? h("div.muted", { dataset: { since } }, `for ${waited(since)}`) : null),
    h("td", c.unread ? h("span.badge", `${c.unread} unread`) : ""),
    h("td", c.assignee ? h("span.person", avatar(c.assignee), c.assignee.name) : "Nobody"));
}

/** The team's open conversations, updated as they happen. */
export async function renderInbox(ctx, page) {
  const holder = h("div.inbox-list");
  // The first 100 (the longest waits first): more than a desk answers at once.
  // A live update or a view change redraws the list: the newest request wins, and the
  // conversation that had the keyboard keeps it.
  let asked = 0;
  async function load() {
    const ask = ++asked;
    const items = await get(`/inbox${qs({ view: inbox.view, q: inbox.q, limit: 100 })}`);
    if (ask !== asked) return;
    inbox.ids = items.map((c) => c.id);
    const focused = holder.contains(document.activeElement) ? document.activeElement.getAttribute("href") : null;
    mount(holder, items.length
      ? h("div.table-wrap", h("table", { "aria-label": "Conversations" },
          h("thead", h("tr", ["Conversation", "Visitor", "Agent", "Status", "Unread", "Assignee"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", items.map(row))))
      : h("p.empty", inbox.q || ["mine", "unassigned"].includes(inbox.view) ? "No conversation in this view." : "Nobody is waiting for a person."));
    if (focused) [...holder.querySelectorAll("tbody a")].find((a) => a.getAttribute("href") === focused)?.focus();
  }
  let pending = null;
  watchInbox(ctx, () => {
    clearTimeout(pending);
    pending = setTimeout(load, 150);
  });
  const ticker = setInterval(() => {
    for (const el of holder.querySelectorAll("[data-since]")) el.textContent = `for ${waited(el.dataset.since)}`;
  }, 20000);
  const views = h("div.row.views", { role: "group", "aria-label": "Views" }, VIEWS.map(([view, label]) =>
    button(label, (e) => {
      inbox.view = view;
      for (const b of views.children) b.setAttribute("aria-pressed", String(b === e.currentTarget));
      load();
    }, { "aria-pressed": String(view === inbox.view) })));
  let typed = null;
  const search = h("input", { type: "search", "aria-label": "Search the inbox", placeholder: "Search title, visitor name or e-mail", maxlength: 200, value: inbox.q, oninput: () => {
    clearTimeout(typed);
    typed = setTimeout(() => {
      inbox.q = search.value.trim();
      load();
    }, 250);
  } });
  // j/k or the arrows move through the list's links; Enter opens.
  const keys = (e) => {
    const down = e.key === "j" || e.key === "ArrowDown";
    if ((!down && e.key !== "k" && e.key !== "ArrowUp") || typing(e)) return;
    if (e.key.startsWith("Arrow") && !holder.contains(document.activeElement)) return;
    const links = [...holder.querySelectorAll("tbody a")];
    if (!links.length) return;
    e.preventDefault();
    const at = links.indexOf(document.activeElement);
    links[at < 0 ? 0 : Math.max(0, Math.min(links.length - 1, at + (down ? 1 : -1)))].focus();
  };
  document.addEventListener("keydown", keys);
  ctx.onLeave(() => {
    clearInterval(ticker);
    document.removeEventListener("keydown", keys);
  });
  await load();
  mount(page,
    pageHeader("Inbox", "Visitors who asked for a person, live. j and k move through the list, Enter opens.", permissionButton(ctx)),
    approvals(ctx),
    h("div.row.inbox-tools", views, h("span.spacer"), search),
    holder);
}

// Tool calls waiting for a person's approval, live: approve, edit the input then approve,
// or deny with a reason. A card stays as it is while the list around it changes.

/** An input as a person reads it: each field and its value. */
const readable = (input) => Object.keys(input).length
  ? h("dl.keys", Object.entries(input).map(([k, v]) => [h("dt", k), h("dd", typeof v === "string" ? v : JSON.stringify(v))]))
  : h("p.muted", "No input");

function approvalCard(a) {
  const path = `/approvals/${enc(a.id)}`;
  const decided = (what) => () => toast(`${a.toolName}: ${what}`);
  const box = h("textarea.code", { name: "input", rows: 5, spellcheck: "false" }, pretty(a.input));
  const edit = onSubmit(h("form.stack", { hidden: true, "aria-label": "Edit input" }, field("Input (JSON)", box), h("button", { type: "submit" }, "Approve with this input")),
    async (data) => post(`${path}/approve`, { input: parseJsonField(data.get("input"), "input") }).then(decided("approved")));
  const deny = onSubmit(h("form.stack", { hidden: true, "aria-label": "Deny" }, field("Reason", h("input", { name: "reason", required: true, maxlength: 1000 }), "The agent reads it and tells the visitor."), h("button.danger", { type: "submit" }, "Deny")),
    async (data) => post(`${path}/deny`, { reason: String(data.get("reason")) }).then(decided("denied")));
  const open = (form) => () => {
    edit.hidden = form !== edit;
    deny.hidden = form !== deny;
    form.querySelector("textarea, input").focus();
  };
  return h("article.card.approval", { "aria-label": `${a.toolName} waits for approval` },
    h("div.row", h("strong", a.toolName), h("span.muted", `${a.agentName} · `, h("a", { href: `#/inbox/${enc(a.conversationId)}` }, a.conversationTitle || "(untitled)"), ` · decide by ${when(a.expiresAt)}`)),
    readable(a.input),
    h("div.row", actionButton("Approve", () => post(`${path}/approve`).then(decided("approved"))),
      button("Edit input", open(edit)), button("Deny", open(deny))),
    edit, deny);
}

/** The live list of calls waiting for approval (hidden while there are none). */
function approvals(ctx) {
  const cards = new Map();
  const list = h("div.stack");
  const section = h("section", { "aria-labelledby": "approvals-head", hidden: true }, h("h2", { id: "approvals-head" }, "Waiting for approval"), list);
  live(ctx, "/approvals/events", (name, e) => {
    const ids = new Set(e.approvals.map((a) => a.id));
    for (const [id, card] of cards) {
      if (!ids.has(id)) {
        card.remove();
        cards.delete(id);
      }
    }
    for (const a of e.approvals) if (!cards.has(a.id)) cards.set(a.id, list.appendChild(approvalCard(a)));
    section.hidden = !cards.size;
  }, ["approvals"]);
  return section;
}

// One inbox conversation, live: messages, private notes and handoff events; reply or note
// (canned responses after "/"), assignment, shortcuts, and the visitor panel.

export const NOTE_LABEL = "Private note – only your team sees this";
const SHORTCUTS = [["j / k", "Next or previous conversation"], ["r", "Reply"], ["n", "Private note"], ["e", "Close the conversation"], ["/", "A canned response (in the reply)"], ["?", "These shortcuts"]];

/** A handoff event in words ("Olivia took the conversation"). */
export const eventText = (status, assignee) => ({ waiting: "The visitor asked for a person", human: `${(assignee && assignee.name) || "A member"} took the conversation`, closed: "The conversation was closed" })[status] || "Handed back to the agent";

/** Who wrote a message or note: the member's name, "Visitor", or the agent's name. */
export const authorOf = (m, agentName) => (m.author && m.author.id ? m.author.name || "Team" : m.role === "user" ? "Visitor" : agentName || "Agent");
export const isNote = (m) => m.author && m.author.type === "note";

/** The files a message came with (an e-mail's attachments), as downloads. */
export const files = (convId, m) => (m.attachments || []).map((a) => h("a.file", { href: `${BASE}/conversations/${enc(convId)}/attachments/${enc(a.id)}`, download: "" }, `📎 ${a.name}`));

/** A message or a private note in the timeline. */
function entry(m, agentName, convId) {
  const note = isNote(m);
  return h("li", { class: note ? "msg note" : `msg ${m.role} author-${m.author ? m.author.type : "ai"}` },
    note ? h("div.note-label", NOTE_LABEL) : null,
    m.author && m.author.id ? avatar(m.author) : null, h("strong", authorOf(m, agentName)), " ",
    h("span.muted", when(m.createdAt)),
    h("div.content", m.content), files(convId, m));
}

/** Messages and notes in the order they were written. */
export const byTime = (messages, notes) => [...messages, ...(notes || [])].sort((a, b) => a.createdAt.localeCompare(b.createdAt));

/** The "/" picker of canned responses: a listbox under the box (aria-activedescendant). */
function cannedPicker(box) {
  let all = null;
  let shown = [];
  let at = 0;
  let start = -1;
  const list = h("ul", { id: "canned-list", role: "listbox", class: "canned", "aria-label": "Canned responses", hidden: true });
  box.setAttribute("aria-autocomplete", "list");
  box.setAttribute("aria-controls", list.id);
  const close = () => {
    list.hidden = true;
    box.removeAttribute("aria-activedescendant");
  };
  const mark = () => {
    [...list.children].forEach((li, i) => li.setAttribute("aria-selected", String(i === at)));
    box.setAttribute("aria-activedescendant", `canned-${at}`);
  };
  const insert = (c) => {
    box.setRangeText(c.content, start, box.selectionStart, "end");
    close();
    box.focus();
  };
  box.addEventListener("input", async () => {
    if (!all && box.value.includes("/")) all = await get("/team/canned-responses").catch(() => []);
    const before = box.value.slice(0, box.selectionStart);
    const typed = /(^|\s)\/([\w-]*)$/.exec(before);
    if (!typed) return close();
    start = before.length - typed[2].length - 1;
    const q = typed[2].toLowerCase();
    shown = all.filter((c) => c.shortcut.startsWith(q) || c.title.toLowerCase().includes(q)).slice(0, 8);
    at = 0;
    mount(list, shown.map((c, i) => h("li", { id: `canned-${i}`, role: "option", onmousedown: (e) => {
      e.preventDefault();
      insert(c);
    } }, h("strong", `/${c.shortcut}`), " ", c.title)));
    list.hidden = !shown.length;
    if (shown.length) mark();
    else close();
  });
  box.addEventListener("keydown", (e) => {
    if (list.hidden) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      at = (at + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
      mark();
    } else if (e.key === "Enter" || e.key === "Tab") {
      insert(shown[at]);
    } else if (e.key === "Escape") {
      e.stopPropagation();
      close();
    } else return;
    e.preventDefault();
  });
  box.addEventListener("blur", close);
  return list;
}

/** The reply box, or the private note box: `mode(true)` writes a note. */
function composer(path, add) {
  let noting = false;
  const box = h("textarea", { id: "reply-text", name: "content", rows: "3", required: true, placeholder: "Type / for a canned response" });
  const label = h("label", { for: "reply-text" });
  const send = h("button", { type: "submit" });
  const tabs = h("div.row.views", { role: "group", "aria-label": "Write" },
    ["Reply", "Note"].map((name, i) => button(name, () => mode(i > 0))));
  const form = onSubmit(h("form.stack.card", { "aria-label": "Reply" }, tabs, label, box, cannedPicker(box), send), async (data) => {
    const text = String(data.get("content")).trim();
    if (!text) throw new Error("content: write something first");
    add(await post(`${path}/${noting ? "notes" : "messages"}`, { content: text }));
    form.reset();
  });
  function mode(note, focus = true) {
    noting = note;
    form.classList.toggle("note-mode", note);
    tabs.children[0].setAttribute("aria-pressed", String(!note));
    tabs.children[1].setAttribute("aria-pressed", String(note));
    label.textContent = note ? "Private note for your team" : "Reply to the visitor";
    send.textContent = note ? "Add note" : "Send reply";
    if (focus) box.focus();
  }
  mode(false, false);
  return { form, box, mode };
}

/** One conversation: its timeline live, the member's controls and the visitor panel. */
export async function renderInboxConversation(ctx, page, id) {
  const path = `/conversations/${enc(id)}`;
  const [conv, panel] = await Promise.all([get(path),
    visitorPanel(id).catch((err) => h("aside.card.visitor", h("p.form-error", describe(err))))]);
  const agent = ctx.agents.find((a) => a.id === conv.agentId);
  const seen = new Set();
  const log = h("ol.transcript", { "aria-label": "Messages" });
  const head = h("div.row.status-row");
  const add = (m) => {
    if (seen.has(m.id)) return;
    seen.add(m.id);
    log.append(entry(m, agent && agent.name, id));
    log.scrollTop = log.scrollHeight;
  };
  const read = () => post(`${path}/read`).catch(() => {});
  let acted = false;
  const act = async (route, body, done) => {
    try {
      showStatus(await post(`${path}/${route}`, body));
      acted = true;
      toast(done);
    } catch (err) {
      toast(describe(err), "error");
    }
  };
  const assign = select([["", "Choose a member"], ...ctx.team.members.map((m) => [m.id, m.name || m.email])], "", { id: "assign-to",
    onchange: () => assign.value && act("assign", { memberId: assign.value }, "Conversation assigned") });
  const acting = (label, route, done) => button(label, () => act(route, {}, done), { class: "secondary" });
  const take = acting("Take it", "assign", "You have the conversation");
  const release = acting("Hand back to the agent", "release", "The agent answers again");
  const close = acting("Close", "close", "Conversation closed");
  function showStatus({ status, assignee }) {
    // An action's answer has no picture: keep the one known.
    if (assignee && conv.assignee && assignee.id === conv.assignee.id) assignee = { ...conv.assignee, ...assignee };
    if (status !== conv.status || (assignee && assignee.id) !== (conv.assignee && conv.assignee.id)) {
      log.append(h("li.event", eventText(status, assignee)));
    }
    Object.assign(conv, { status, assignee });
    take.hidden = Boolean(assignee) || status === "closed";
    release.hidden = status === "bot" || status === "closed";
    close.hidden = status === "closed";
    assign.value = assignee ? assignee.id : "";
    mount(head, statusTag(status), assignee ? h("span.person", avatar(assignee), assignee.name) : null,
      h("label", { for: "assign-to" }, "Assign to"), assign);
  }
  byTime(conv.messages, conv.notes).forEach(add);
  showStatus(conv);
  read();
  live(ctx, `${path}/events`, (name, data, id) => {
    // The stream's first event (no id) is the status when it opened: older than an action's answer.
    if (name === "status") (id || !acted) && showStatus(data);
    else if (name === "note") add(data.note);
    else if (!seen.has(data.message.id)) {
      add(data.message);
      read();
    }
  }, ["status", "message", "note"]);
  watchInbox(ctx, () => {});
  const write = composer(path, add);
  const help = h("details.card", h("summary", "Keyboard shortcuts"),
    h("dl.keys", SHORTCUTS.map(([k, what]) => [h("dt", k), h("dd", what)])));
  async function step(by) {
    if (!inbox.ids.includes(id)) inbox.ids = (await get("/inbox?view=all&limit=100")).map((c) => c.id);
    const next = inbox.ids[inbox.ids.indexOf(id) + by];
    if (next) ctx.navigate(`#/inbox/${enc(next)}`);
  }
  const keys = (e) => {
    if (e.key === "Escape" && e.target === write.box) return write.box.blur();
    if (typing(e)) return;
    const key = { j: () => step(1), k: () => step(-1), r: () => write.mode(false), n: () => write.mode(true), e: () => close.hidden || close.click(), "?": () => (help.open = !help.open) }[e.key];
    if (!key) return;
    e.preventDefault();
    key();
  };
  document.addEventListener("keydown", keys);
  ctx.onLeave(() => document.removeEventListener("keydown", keys));
  mount(page,
    pageHeader(conv.title || "(untitled)", agent ? `With ${agent.name}` : null, take, release, close,
      h("a.button.secondary", { href: "#/inbox" }, "Back to the inbox")),
    h("div.desk", h("div.stack", head, log, write.form, help), panel));
}

// An inbox conversation's side panel: who the visitor is, where they are, what they did
// before (as the server links it).

/** A term and its value (left out when there is no value). */
const pair = (term, value) => (value === null || value === undefined || value === "" ? null : [h("dt", term), h("dd", value)]);

/** The visitor panel of conversation `id`. */
export async function visitorPanel(id) {
  const v = await get(`/conversations/${enc(id)}/visitor`);
  const attrs = Object.entries(v.attributes || {});
  const list = (title, rows, item, empty) => [h("h3", title),
    rows.length ? h("ul.plain", rows.map((r) => h("li", item(r)))) : h("p.muted", empty)];
  return h("aside.card.visitor", { "aria-label": "Visitor" },
    h("h2", v.name || v.email || "Anonymous visitor"),
    h("dl",
      pair("Name", v.name),
      pair("E-mail", v.email),
      pair("Identity", v.verified ? "Verified by your site" : h("span.tag.warn", "Not verified")),
      pair("User id", v.userId),
      pair("Page", v.pageUrl),
      pair("Came from", v.referrer),
      pair("Language", v.language ? localeName(v.language) : null)),
    attrs.length ? [h("h3", "Attributes"), h("dl", attrs.map(([k, val]) => pair(k, String(val))))] : null,
    list("Previous conversations", v.previousConversations || [], (c) => [
      h("a", { href: `#/inbox/${enc(c.id)}` }, c.title || "(untitled)"), " ", h("span.muted", when(c.createdAt))], "None."),
    list("Form submissions", v.submissions || [], (s) => [
      h("a", { href: `#/submissions/${enc(s.id)}` }, s.formName), " ", h("span.muted", when(s.createdAt))], "None."));
}
