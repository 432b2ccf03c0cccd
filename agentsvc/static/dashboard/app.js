// The dashboard: boot (first run, sign-in, or the app), the shell and a small hash router.

import { ApiError, describe, get, post, setUnauthorizedHandler } from "./api.js";
import { button, h, mount } from "./dom.js";
import { renderAcceptInvitation, renderSetup, renderSignIn } from "./page-auth.js";
import { renderAgent, renderAgents } from "./page-agents.js";
import { renderDocument, renderKnowledge, renderReview } from "./page-knowledge.js";
import { renderSources } from "./page-sources.js";
import { renderTool, renderTools } from "./page-tools.js";
import { renderTrigger, renderTriggers } from "./page-triggers.js";
import { renderConversation, renderConversations } from "./page-conversations.js";
import { renderInbox, renderInboxConversation } from "./page-inbox.js";
import { renderAnalytics } from "./page-analytics.js";
import { renderUsage } from "./page-usage.js";
import { renderPreview } from "./chat.js";
import { renderWidget } from "./page-widget.js";
import { renderChannels } from "./page-channels.js";
import { renderApiKeys, renderProfile, renderSecrets, renderTeam } from "./page-team.js";
import { renderAuditLog, renderSubmission, renderSubmissions, renderWebhook, renderWebhooks } from "./page-deliveries.js";

const root = document.getElementById("app");
const leaving = [];
const AGENT_KEY = "agentsvc:dashboard:agent";

/** Navigation: [hash, label, page, needs an agent]. */
const NAV = [
  ["agents", "Agents", renderAgents, false],
  ["inbox", "Inbox", renderInbox, false],
  ["knowledge", "Knowledge", renderKnowledge, true],
  ["tools", "Tools", renderTools, true],
  ["triggers", "Triggers", renderTriggers, true],
  ["preview", "Chat preview", renderPreview, true],
  ["conversations", "Conversations", renderConversations, true],
  ["review", "Review", renderReview, true],
  ["submissions", "Form submissions", renderSubmissions, false],
  ["analytics", "Analytics", renderAnalytics, true],
  ["usage", "Usage", renderUsage, false],
  ["widget", "Widget", renderWidget, true],
  ["channels", "Channels", renderChannels, true],
  ["team", "Team", renderTeam, false],
  ["api-keys", "API keys", renderApiKeys, false],
  ["secrets", "Secrets", renderSecrets, false],
  ["webhooks", "Webhooks", renderWebhooks, false],
  ["audit-log", "Audit log", renderAuditLog, false],
  ["profile", "Profile", renderProfile, false],
];
const DETAIL = {
  agents: renderAgent,
  knowledge: (c, p, id, part) => (id === "sources" ? renderSources(c, p, part) : renderDocument(c, p, id)),
  tools: renderTool,
  triggers: renderTrigger,
  conversations: renderConversation,
  inbox: renderInboxConversation,
  submissions: renderSubmission,
  webhooks: renderWebhook,
};

/** What every page receives. */
const ctx = {
  session: null, // {user, team, teams}
  team: null, // GET /team/context
  agents: [],
  agentId: localStorage.getItem(AGENT_KEY) || "",
  get isOwner() {
    return Boolean(this.team && this.team.isOwner);
  },
  get agent() {
    return this.agents.find((a) => a.id === this.agentId) || null;
  },
  /** Run `fn` when the page is left (live streams close). */
  onLeave(fn) {
    leaving.push(fn);
  },
  navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  },
  setAgent(id) {
    this.agentId = id || "";
    localStorage.setItem(AGENT_KEY, this.agentId);
    renderAgentPicker();
  },
  async refreshAgents(pending) {
    this.agents = await (pending || get("/agents"));
    if (!this.agents.some((a) => a.id === this.agentId)) {
      this.setAgent(this.agents.length ? this.agents[0].id : "");
    } else {
      renderAgentPicker();
    }
  },
  restart: () => boot(),
};

let shell = null; // {main, nav, picker}

function renderAgentPicker() {
  if (!shell) return;
  const picker = h("select", {
    id: "agent-picker",
    onchange: (e) => {
      ctx.setAgent(e.target.value);
      route();
    },
  });
  if (!ctx.agents.length) picker.append(h("option", { value: "" }, "No agents yet"));
  for (const agent of ctx.agents) {
    picker.append(h("option", { value: agent.id, selected: agent.id === ctx.agentId }, agent.name));
  }
  mount(shell.picker, h("label", { for: "agent-picker" }, "Agent"), picker);
}

function buildShell() {
  const main = h("main", { id: "main", tabindex: "-1" });
  const nav = h("ul.nav");
  const picker = h("div.picker");
  const user = ctx.session.user;
  const signOut = async () => {
    try {
      await post("/auth/sign-out");
    } finally {
      boot();
    }
  };
  const teamSwitch = ctx.session.teams && ctx.session.teams.length > 1
    ? h("select", {
        "aria-label": "Team",
        onchange: async (e) => {
          await post("/auth/session/team", { teamId: e.target.value });
          boot();
        },
      }, ctx.session.teams.map((t) => h("option", { value: t.id, selected: t.id === ctx.session.team.id }, `${t.name} (${t.role})`)))
    : h("span.team-name", ctx.session.team.name);
  // On a narrow screen the sections fold behind this button (CSS shows it there only).
  const menu = button("Menu", () => showMenu(menu.getAttribute("aria-expanded") !== "true"), { class: "secondary small menu-toggle", "aria-expanded": "false", "aria-controls": "side-nav" });
  mount(root,
    h("header.topbar",
      menu,
      h("a.brand", { href: "#/agents" }, "agentsvc"),
      teamSwitch,
      h("span.role-badge", ctx.isOwner ? "owner" : "member"),
      h("span.spacer"),
      h("a.who", { href: "#/profile", title: "Your profile" }, user.name || user.email),
      button("Sign out", signOut)),
    h("div.layout",
      h("nav.side", { id: "side-nav", "aria-label": "Sections" }, picker, nav),
      main));
  root.classList.remove("loading", "menu-open");
  // A chosen section folds the narrow screen's menu (also when it is the page shown).
  nav.addEventListener("click", (event) => {
    if (event.target.closest("a")) showMenu(false);
  });
  for (const [hash, label] of NAV) {
    nav.append(h("li", h("a", { href: `#/${hash}`, dataset: { page: hash } }, label)));
  }
  shell = { main, nav, picker, menu };
  renderAgentPicker();
}

/** Open or fold the sections menu of a narrow screen. */
function showMenu(open) {
  if (!shell) return;
  shell.menu.setAttribute("aria-expanded", String(open));
  root.classList.toggle("menu-open", open);
}

let routeSeq = 0;

/** Render the page named by location.hash into the main area. */
async function route() {
  if (!shell) return;
  const seq = ++routeSeq;
  while (leaving.length) {
    try {
      leaving.pop()();
    } catch {
      /* a stream already closed */
    }
  }
  const parts = (location.hash.replace(/^#\/?/, "") || "agents").split("/").map(decodeURIComponent);
  const [section, id, part, more, last] = parts;
  const entry = NAV.find((n) => n[0] === section) || NAV[0];
  for (const link of shell.nav.querySelectorAll("a")) {
    if (link.dataset.page === entry[0]) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const main = shell.main;
  main.setAttribute("aria-busy", "true");
  mount(main, h("p.muted", "Loading…"));
  const page = h("div.page", { dataset: { page: entry[0] } });
  try {
    if (id && DETAIL[entry[0]]) {
      await DETAIL[entry[0]](ctx, page, id, part, more, last);
    } else if (entry[3] && !ctx.agent) {
      mount(page,
        h("h1", entry[1]),
        h("p.empty", "Create an agent first: this page shows one agent's data."),
        ctx.isOwner ? h("a.button", { href: "#/agents/new" }, "Create an agent") : null);
    } else {
      await entry[2](ctx, page);
    }
  } catch (err) {
    if (seq !== routeSeq) return;
    mount(page, h("h1", entry[1]), h("p.form-error", { role: "alert" }, describe(err)));
  }
  if (seq !== routeSeq) return;
  mount(main, page);
  main.removeAttribute("aria-busy");
  document.title = `${entry[1]} · agentsvc`;
  // After a navigation, put keyboard and screen-reader focus on the new page.
  if (focusAfterRoute) main.focus({ preventScroll: true });
}

let focusAfterRoute = false;

/** Decide what to show: accept an invitation, first-run setup, sign-in, or the app. */
async function boot() {
  shell = null;
  root.classList.add("loading");
  try {
    if (location.pathname === "/accept-invitation") {
      await renderAcceptInvitation(root, ctx);
      return;
    }
    // Asked side by side, not one after the other: a fresh load's time is mostly these.
    const session = get("/auth/session", { quiet401: true });
    session.catch(() => {}); // not read on a first run; read (and its refusal handled) below
    const setup = await get("/setup");
    if (setup.needsOwner) {
      renderSetup(root, ctx);
      return;
    }
    try {
      ctx.session = await session;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        await renderSignIn(root, ctx);
        return;
      }
      throw err;
    }
    const agents = get("/agents");
    agents.catch(() => {}); // read below, once the team is known
    ctx.team = await get("/team/context");
    // Name the start page in the address (without a hashchange), so links to it are no-ops.
    if (!location.hash || location.hash === "#") history.replaceState(null, "", "#/agents");
    buildShell();
    await ctx.refreshAgents(agents);
    await route();
  } catch (err) {
    root.classList.remove("loading");
    mount(root, h("div.card.narrow",
      h("h1", "The dashboard could not start"),
      h("p.form-error", { role: "alert" }, describe(err)),
      button("Try again", boot, { class: null })));
  }
}

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && root.classList.contains("menu-open")) {
    showMenu(false);
    shell.menu.focus();
  }
});
setUnauthorizedHandler(() => {
  if (shell) boot();
});
window.addEventListener("hashchange", () => {
  focusAfterRoute = true;
  showMenu(false);
  route();
});
boot();
