// The embed snippet with a copy button, and a live preview of the widget on a demo page.

import { h, mount, copyText, toast } from "./dom.js";
import { pageHeader } from "./forms.js";

/** The snippet that embeds this agent's widget: the same text as the README and demo page. */
export function embedSnippet(origin, agentId) {
  // JSON is a JS object literal; escaping < keeps "</script>" out of it.
  const config = `{"agentId": ${JSON.stringify(agentId)}}`.replace(/</g, "\\u003c");
  const src = `${origin}/widget.js`.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return [
    "<script>",
    `window.agentsvcConfig = ${config};`,
    "(function (a) {",
    '  ["open", "close", "toggle", "send", "identify", "reset", "track",',
    '   "registerFormHandler", "showBubble", "showForm", "talkToPerson", "mount",',
    '   "configure", "on", "off"].forEach(function (m) {',
    "    if (a.q) a[m] = a[m] || function () { a.q.push([m, [].slice.call(arguments)]); };",
    "  });",
    "})((window.agentsvc = window.agentsvc || { q: [] }));",
    "</script>",
    `<script src="${src}" async></script>`,
  ].join("\n");
}

/** Snippet, copy button and a live preview iframe of /widget/demo. */
export async function renderWidget(ctx, page) {
  const agent = ctx.agent;
  const snippet = embedSnippet(location.origin, agent.id);
  const code = h("pre", { class: "snippet", id: "embed-snippet", tabindex: "0" }, snippet);
  const copy = h("button", { type: "button", onclick: async () => {
    const ok = await copyText(snippet);
    copy.textContent = ok ? "Copied" : "Copy failed";
    toast(ok ? "Snippet copied to the clipboard" : "Select the snippet and copy it by hand", ok ? "ok" : "error");
    setTimeout(() => (copy.textContent = "Copy snippet"), 2000);
  } }, "Copy snippet");
  const demo = `/widget/demo?agentId=${encodeURIComponent(agent.id)}`;
  const frame = h("iframe", { src: demo, title: "Widget preview", class: "widget-frame", loading: "lazy" });
  mount(page,
    pageHeader(`Widget of ${agent.name}`, "Paste this before </body> on every page where the chat should appear."),
    h("section", { class: "card" }, h("div", { class: "row" }, h("h2", {}, "Embed snippet"), h("span", { class: "spacer" }), copy), code,
      h("p", { class: "muted" }, "Identify signed-in visitors with userId, userEmail, userName (and userHash when the agent has an identity secret)."),
      h("p", { class: "muted" }, "The widget's look, language, texts and starter questions are set on ", h("a", { href: `#/agents/${encodeURIComponent(agent.id)}` }, "the agent's page"),
        " (Appearance); a page can override them with appearance, language, strings and starters in its configuration.")),
    h("section", { class: "card" }, h("div", { class: "row" }, h("h2", {}, "Live preview"), h("span", { class: "spacer" }), h("a", { href: demo, target: "_blank", rel: "noopener" }, "Open the demo page")), frame));
}
