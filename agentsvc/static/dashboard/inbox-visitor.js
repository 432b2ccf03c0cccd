// An inbox conversation's side panel: who the visitor is, where they are, what they did
// before (as the server links it).

import { get } from "./api.js";
import { h, when } from "./dom.js";
import { localeName } from "./labels.js";

/** A term and its value (left out when there is no value). */
const pair = (term, value) => (value === null || value === undefined || value === "" ? null : [h("dt", {}, term), h("dd", {}, value)]);

/** The visitor panel of conversation `id`. */
export async function visitorPanel(id) {
  const v = await get(`/conversations/${encodeURIComponent(id)}/visitor`);
  const attrs = Object.entries(v.attributes || {});
  const list = (title, rows, item, empty) => [h("h3", {}, title),
    rows.length ? h("ul", { class: "plain" }, rows.map((r) => h("li", {}, item(r)))) : h("p", { class: "muted" }, empty)];
  return h("aside", { class: "card visitor", "aria-label": "Visitor" },
    h("h2", {}, v.name || v.email || "Anonymous visitor"),
    h("dl", {},
      pair("Name", v.name),
      pair("E-mail", v.email),
      pair("Identity", v.verified ? "Verified by your site" : h("span", { class: "tag warn" }, "Not verified")),
      pair("User id", v.userId),
      pair("Page", v.pageUrl),
      pair("Came from", v.referrer),
      pair("Language", v.language ? localeName(v.language) : null)),
    attrs.length ? [h("h3", {}, "Attributes"), h("dl", {}, attrs.map(([k, val]) => pair(k, String(val))))] : null,
    list("Previous conversations", v.previousConversations || [], (c) => [
      h("a", { href: `#/inbox/${encodeURIComponent(c.id)}` }, c.title || "(untitled)"), " ", h("span", { class: "muted" }, when(c.createdAt))], "None."),
    list("Form submissions", v.submissions || [], (s) => [
      h("a", { href: `#/submissions/${encodeURIComponent(s.id)}` }, s.formName), " ", h("span", { class: "muted" }, when(s.createdAt))], "None."));
}
