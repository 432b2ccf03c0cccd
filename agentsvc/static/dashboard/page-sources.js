// An agent's sources (#/knowledge/sources[/ID], from the Knowledge page): websites its
// knowledge follows, their pages turned into documents and kept in step on a schedule or
// at once; a sync followed live from its events. Any member may do all of it (the API asks
// no owner).

import { enc, get, patch, post, qs } from "./api.js";
import { field, h, mount, pager, select, table, toast, when } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";
import { live } from "./page-inbox.js";

const HOME = "#/knowledge/sources";
const TYPE = { sitemap: "A sitemap", crawl: "A whole site, followed through its links", url: "One page" };
const EVERY = { off: "Never (only on Sync now)", hourly: "Every hour", daily: "Every day", weekly: "Every week" };
// A source's status and a page's, in words; the tag's colour: good, bad or (else) warn.
const STATUS = {
  queued: "Waiting to sync", syncing: "Syncing", ready: "Up to date", failed: "Failed",
  pending: "Not fetched yet", ok: "Indexed", duplicate: "Another page's copy", skipped: "Left out",
};
const tag = (s) => h("span", { class: `tag ${{ ready: "good", ok: "good", failed: "bad" }[s.status] || "warn"}` }, STATUS[s.status]);
const busy = (s) => s.status === "queued" || s.status === "syncing";
/** When the next sync starts (none is set while one runs). */
const next = (s) => when(s.nextSyncAt) || (s.schedule === "off" ? "only on Sync now" : "once this one ends");
const lines = (text) => String(text).split("\n").map((l) => l.trim()).filter(Boolean);
/** An error as people read it (a fault the server did not foresee names only its class). */

/** The settings a source is added with and changed by. */
const options = (s) => [
  h("div.grid2",
    field("Pages to include (optional)", h("textarea", { name: "include", rows: 2, placeholder: "/help/**" }, s.include.join("\n")),
      "One pattern per line, over a page's path: * is any text but /, ** any text. Empty: every page."),
    field("Pages to leave out (optional)", h("textarea", { name: "exclude", rows: 2, placeholder: "/help/internal/**" }, s.exclude.join("\n")))),
  h("div.grid2",
    field("Pages at most (optional)", h("input", { name: "max", type: "number", min: 1, value: s.maxPages }), "Empty: as many as your plan allows."),
    field("How often to check", select(Object.entries(EVERY), s.schedule, { name: "schedule" }))),
];
const read = (data) => ({ include: lines(data.get("include")), exclude: lines(data.get("exclude")), maxPages: Number(data.get("max")) || undefined, schedule: data.get("schedule") });

/** The Sources page: the agent's sources and the form that adds one; `id`: one source. */
export async function renderSources(ctx, page, id) {
  if (id) return sourcePage(ctx, page, id);
  const agent = ctx.agent;
  if (!agent) return ctx.navigate("#/knowledge"); // which says to create one first
  const path = `/agents/${enc(agent.id)}/sources`;
  const add = onSubmit(h("form.stack.card", { "aria-label": "Add a source" },
    h("h2", "Add a source"),
    h("div.grid2",
      field("What to follow", select(Object.entries(TYPE), "sitemap", { name: "type" })),
      field("Address", h("input", { name: "url", type: "url", required: true, placeholder: "https://shop.example/sitemap.xml" }), "The sitemap, the start page or the page.")),
    options({ include: [], exclude: [], schedule: "daily" }),
    h("button", { type: "submit" }, "Add source")), async (data) => {
    const made = await post(path, { type: data.get("type"), url: data.get("url").trim(), ...read(data) });
    toast("Source added: its first sync has started");
    ctx.navigate(`${HOME}/${enc(made.id)}`);
  });
  mount(page,
    pageHeader(`Sources of ${agent.name}`, "Websites the agent's knowledge follows: their pages become documents, kept in step with the site. Any member of the team can add, sync, change and delete them.",
      h("a.button.secondary", { href: "#/knowledge" }, "All documents")),
    h("div.stack", table([
      ["Address", (s) => h("a", { href: `${HOME}/${enc(s.id)}` }, s.url)],
      ["What", (s) => TYPE[s.type]],
      ["How often", (s) => EVERY[s.schedule]],
      ["Status", tag],
      ["Pages", (s) => Object.entries(s.pages).map(([k, n]) => `${n} ${k}`).join(", ")],
      ["Last sync", (s) => when(s.lastSyncAt) || "Not yet"],
      ["Next sync", next],
    ], await get(path), "No sources yet: add the first one below.", "Sources"), add));
}

/** One source: its sync (live while it runs), Sync now, its pages, its settings. */
async function sourcePage(ctx, page, id) {
  const path = `/sources/${enc(id)}`;
  const src = await get(path);
  if (ctx.agentId !== src.agentId) ctx.setAgent(src.agentId);
  const state = h("p", { role: "status" });
  const bar = h("progress", { id: "sync-bar" });
  const going = h("div", h("label", { for: "sync-bar" }, "Pages done"), bar);
  const figures = h("dl.figures");
  const times = h("p.muted");
  const draw = (s) => {
    const p = s.pages;
    mount(state, h("strong", STATUS[s.status]), busy(s) ? `: ${p.fetched + p.failed} of ${p.found} pages done` : s.error ? `: ${s.error}` : "");
    going.hidden = !busy(s);
    bar.max = p.found || 1;
    if (p.found) bar.value = p.fetched + p.failed;
    else bar.removeAttribute("value"); // nothing found yet: a bar that only says it works
    mount(figures, Object.entries(p).map(([k, n]) => h("div", h("dt", `Pages ${k}`), h("dd", String(n)))));
    times.textContent = `Last sync: ${when(s.lastSyncAt) || "not yet"}. Next: ${next(s)}.`;
  };
  const view = { cursor: "", back: [], shown: 0, limit: 100 };
  const pages = h("div");
  const load = async () => {
    const rows = await get(`${path}/pages${qs({ after: view.cursor, limit: view.limit })}`);
    const more = rows.length === view.limit && rows.at(-1).url;
    mount(pages, table([
      ["Page", (p) => h("a", { href: p.url, target: "_blank", rel: "noopener noreferrer" }, p.url)],
      ["Status", tag],
      ["Last change", (p) => when(p.lastChangeAt) || "—"],
      ["Why", (p) => p.error || ""],
    ], rows, "No pages yet.", "Pages of the source"),
    more || view.back.length ? pager(view, more, rows.length, load) : null);
  };
  let following = null;
  const follow = () => {
    following = following || live(ctx, `${path}/events`, (name, s) => {
      draw(s);
      if (name !== "end") return;
      following.close();
      following = null;
      load();
    }, ["progress", "end"]);
  };
  const edit = onSubmit(h("form.stack.card", { "aria-label": "Change the source" },
    h("h2", "Change the source"),
    options(src),
    h("button", { type: "submit" }, "Save changes")), async (data) => {
    draw(await patch(path, read(data)));
    toast("Saved: the next sync follows them");
  });
  draw(src);
  if (busy(src)) follow();
  await load();
  mount(page,
    pageHeader(src.url, TYPE[src.type],
      h("a.button.secondary", { href: HOME }, "All sources"),
      actionButton("Sync now", async () => {
        draw(await post(`${path}/sync`));
        follow();
      }),
      deleteButton("Delete source", "Delete this source and the documents its pages made? The agent stops answering from them at once.", "Delete source",
        path, "Source deleted", () => ctx.navigate(HOME))),
    h("section.card.stack", { "aria-label": "Sync" }, h("h2", "Sync"), state, going, figures, times),
    h("section.card.stack", { "aria-label": "Pages" }, h("h2", "Pages"), pages),
    edit);
}
