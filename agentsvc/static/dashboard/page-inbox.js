// Inbox: the team's open conversations by view, searched, live; a desktop notification and
// a beep for each new waiting one, as the member chose.

import { BASE, get, qs } from "./api.js";
import { avatar, button, h, mount } from "./dom.js";
import { actionButton, pageHeader } from "./forms.js";
import { conversationStatus } from "./labels.js";

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

/** Follow the team's inbox: `changed` on every event; a notification and a beep (as chosen
 *  on the Profile page) when a conversation starts waiting. */
export function watchInbox(ctx, changed) {
  const who = me(ctx);
  // Sound plays only after a gesture: make the audio context on one.
  const prime = () => { if (who.notifySound && !audio) audio = new AudioContext(); };
  document.addEventListener("pointerdown", prime, { once: true });
  ctx.onLeave(() => document.removeEventListener("pointerdown", prime));
  live(ctx, "/inbox/events", (name, e) => {
    changed(e);
    if (e.kind !== "status" || e.status !== "waiting") return;
    if (who.notifySound) beep();
    if (who.notifyBrowser && window.Notification && Notification.permission === "granted") {
      const agent = ctx.agents.find((a) => a.id === e.agentId);
      const note = new Notification("A visitor is waiting for a person", { body: agent ? `Agent: ${agent.name}` : "", tag: e.conversationId });
      note.onclick = () => {
        window.focus();
        ctx.navigate(`#/inbox/${encodeURIComponent(e.conversationId)}`);
      };
    }
  }, ["conversation"]);
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
  return h("tr", {},
    h("td", {},
      h("a", { href: `#/inbox/${encodeURIComponent(c.id)}` }, c.title || "(untitled)"),
      c.lastMessage ? h("div", { class: "muted preview" }, c.lastMessage.preview) : null),
    h("td", {}, visitorName(c.visitor)),
    h("td", {}, c.agentName),
    h("td", {}, statusTag(c.status), since ? h("div", { class: "muted", dataset: { since } }, `for ${waited(since)}`) : null),
    h("td", {}, c.unread ? h("span", { class: "badge" }, `${c.unread} unread`) : ""),
    h("td", {}, c.assignee ? h("span", { class: "person" }, avatar(c.assignee), c.assignee.name) : "Nobody"));
}

/** The team's open conversations, updated as they happen. */
export async function renderInbox(ctx, page) {
  const holder = h("div", { class: "inbox-list" });
  // The first 100 (the longest waits first): more than a desk answers at once.
  async function load() {
    const items = await get(`/inbox${qs({ view: inbox.view, q: inbox.q, limit: 100 })}`);
    inbox.ids = items.map((c) => c.id);
    mount(holder, items.length
      ? h("div", { class: "table-wrap" }, h("table", { "aria-label": "Conversations" },
          h("thead", {}, h("tr", {}, ["Conversation", "Visitor", "Agent", "Status", "Unread", "Assignee"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, items.map(row))))
      : h("p", { class: "empty" }, inbox.q || ["mine", "unassigned"].includes(inbox.view) ? "No conversation in this view." : "Nobody is waiting for a person."));
  }
  let pending = null;
  watchInbox(ctx, () => {
    clearTimeout(pending);
    pending = setTimeout(load, 150);
  });
  const ticker = setInterval(() => {
    for (const el of holder.querySelectorAll("[data-since]")) el.textContent = `for ${waited(el.dataset.since)}`;
  }, 20000);
  const views = h("div", { class: "row views", role: "group", "aria-label": "Views" }, VIEWS.map(([view, label]) =>
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
    h("div", { class: "row inbox-tools" }, views, h("span", { class: "spacer" }), search),
    holder);
}
