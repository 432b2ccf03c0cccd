// The widget in the dashboard. The agent's widget look (a section of the agent's page):
// appearance, language, starters and texts, with a live preview: the real widget in a frame of
// /widget/demo, given the unsaved settings by configure(). The Widget page: the embed snippet
// with a copy button, and a live preview of the widget on a demo page.

import { enc, patch } from "./api.js";
import { beside, button, copyText, field, h, mount, select, toast } from "./dom.js";
import { onSubmit, pageHeader } from "./forms.js";

export const LANGUAGES = [
  ["en", "English"], ["de", "German"], ["fr", "French"], ["es", "Spanish"], ["pt", "Portuguese"],
  ["it", "Italian"], ["nl", "Dutch"], ["pl", "Polish"], ["tr", "Turkish"], ["ar", "Arabic"],
  ["he", "Hebrew"], ["ja", "Japanese"], ["zh", "Chinese"],
];
const MAX_IMAGE = 32768; // characters of a data: URL, as the API allows
const COLOURS = [["accentColor", "Accent"], ["textColor", "Text"], ["backgroundColor", "Background"]];

const tables = {};
/** A language's built-in texts (the widget's own locale file). */
async function table(code) {
  if (!tables[code]) {
    const response = await fetch(`/widget/locales/${code}.json`);
    tables[code] = response.ok ? await response.json() : {};
  }
  return tables[code];
}

/** "#2457D6", "2457d6" or "#25d" as the API's "#2457d6"; null when it is no colour. */
export function hexColour(text) {
  const m = String(text || "").trim().toLowerCase().match(/^#?([0-9a-f]{3}|[0-9a-f]{6})$/);
  if (!m) return null;
  const digits = m[1].length === 3 ? [...m[1]].map((c) => c + c).join("") : m[1];
  return `#${digits}`;
}

/** A colour: the picker, and its hex code in a text field beside it, kept in step. */
function colourField(name, label, value) {
  const picker = h("input", { name, type: "color", value });
  const hex = h("input.hex", { value, maxlength: 7, size: 8, spellcheck: "false", autocomplete: "off", "aria-label": `${label} (hex)`, title: "A colour as #RRGGBB" });
  picker.addEventListener("input", () => {
    hex.value = picker.value;
    hex.setCustomValidity("");
  });
  // Before the form's own listener (the event bubbles to it): the preview reads the picker.
  hex.addEventListener("input", () => {
    const colour = hexColour(hex.value);
    if (colour) picker.value = colour;
    hex.setCustomValidity(colour ? "" : "A colour as # and six hex digits, e.g. #2457d6");
  });
  hex.addEventListener("change", () => {
    const colour = hexColour(hex.value);
    if (colour) hex.value = colour;
  });
  const wrap = field(label, picker);
  beside(picker, hex);
  return wrap;
}

/** A text input for an image: an https address, or a small file read as a data: URL. */
function imageInput(name, label, value) {
  const input = h("input", { name, value: value || "", placeholder: "https://… (or choose a file)", autocomplete: "off" });
  const file = h("input", { type: "file", accept: "image/png,image/jpeg,image/gif,image/webp,image/svg+xml", "aria-label": `${label}: choose a file` });
  file.addEventListener("change", () => {
    const chosen = file.files[0];
    if (!chosen) return;
    const reader = new FileReader();
    reader.onload = () => {
      if (String(reader.result).length > MAX_IMAGE) {
        toast(`${label}: the image is over 24 KB; choose a smaller one or give an https address`, "error");
        return;
      }
      input.value = String(reader.result);
      input.dispatchEvent(new Event("input", { bubbles: true }));
    };
    reader.readAsDataURL(chosen);
  });
  return [field(label, input, "An https address, or a PNG, JPEG, GIF, WebP or SVG file of up to 24 KB."), file];
}

/** The Appearance section of an agent's page (form and preview side by side). */
export function widgetLookSection(agent) {
  const saved = agent.widget;
  const look = saved.appearance;
  const strings = structuredClone(saved.strings); // every language's overrides, edited here
  const text = (name, label, value, hint, attrs = {}) =>
    field(label, h("input", { name, value: value ?? "", autocomplete: "off", ...attrs }), hint);
  const number = (name, label, value, max) =>
    field(label, h("input", { name, type: "number", min: 0, max, step: 1, value }));

  const textsLanguage = select(LANGUAGES, saved.language === "auto" ? "en" : saved.language, { name: "textsLanguage" });
  const textsList = h("div.grid2.texts");
  async function showTexts() {
    const code = textsLanguage.value;
    const [own, english] = await Promise.all([table(code), table("en")]);
    const mine = strings[code] || {};
    textsList.replaceChildren(...[...Object.keys(english), "welcome"].map((key) =>
      field(key === "welcome" ? "Greeting (overrides the welcome message)" : english[key], h("input", {
        dataset: { key },
        value: mine[key] || "",
        placeholder: key === "welcome" ? "(the welcome message)" : own[key] || english[key],
        maxlength: 500,
        autocomplete: "off",
        oninput: (event) => {
          const value = event.target.value;
          strings[code] = { ...(strings[code] || {}) };
          if (value) strings[code][key] = value;
          else delete strings[code][key];
        },
      }))));
  }
  textsLanguage.addEventListener("change", () => showTexts().then(preview));

  const form = h("form.stack.look-form", { "aria-label": "Widget appearance" },
    h("fieldset", h("legend", "Colours and shape"),
      h("div.grid2",
        COLOURS.map(([name, label]) => colourField(name, label, look[name])),
        number("radius", "Corner radius (px, 0-24)", look.radius, 24),
        text("fontFamily", "Font family", look.fontFamily, "Fonts the site loads, e.g. Inter, sans-serif (letters, digits, spaces, commas, hyphens).", { maxlength: 200 }),
        field("Dark mode", select([["off", "Off"], ["on", "On"], ["auto", "Auto (follows the visitor's system)"]], look.darkMode, { name: "darkMode" })))),
    h("fieldset", h("legend", "Launcher"),
      h("div.grid2",
        field("Position", select([["right", "Bottom right"], ["left", "Bottom left"]], look.position, { name: "position" })),
        number("offsetX", "Distance from the side (px)", look.offsetX, 200),
        number("offsetY", "Distance from the bottom (px)", look.offsetY, 200)),
      imageInput("launcherIcon", "Launcher icon", look.launcherIcon)),
    h("fieldset", h("legend", "Header and greeting"),
      text("title", "Title", look.title, "Empty: \"Chat\" in the visitor's language.", { maxlength: 80 }),
      imageInput("avatar", "Avatar", look.avatar),
      field("Welcome message", h("textarea", { name: "welcomeMessage", rows: 2, maxlength: 1000 }, look.welcomeMessage || ""),
        "Shown at the top of every conversation; empty: none."),
      h("label", h("input", { type: "checkbox", name: "poweredBy", checked: look.poweredBy }), " Show \"Powered by agentsvc\""),
      field("Show an answer's sources under it", h("input", { type: "checkbox", name: "showSources", checked: agent.showSources }),
        "Under each answer, the documents it drew on (your site's pages as links).")),
    h("fieldset", h("legend", "Locale and starters"),
      field("Locale", select([["auto", "Automatic: the page's language, else the visitor's browser"], ...LANGUAGES], saved.language, { name: "language" }),
        "The language of the widget's texts. Arabic and Hebrew are laid out right to left."),
      h("div.grid2", [0, 1, 2, 3].map((i) =>
        text(`starter${i}`, `Starter question ${i + 1}`, saved.starters[i], null, { maxlength: 200 })))),
    h("details", h("summary", "Texts: override any text the visitor sees"),
      field("Texts of", textsLanguage, "An empty field keeps the built-in text shown in it."),
      textsList),
    h("button", { type: "submit" }, "Save appearance"));

  /** The form's settings in the API's shape (an empty field: the default). */
  function settings() {
    const data = new FormData(form);
    const value = (name) => String(data.get(name) ?? "").trim() || null;
    const integer = (name, fallback) => (value(name) === null ? fallback : Number(value(name)));
    const appearance = {
      accentColor: value("accentColor"), textColor: value("textColor"), backgroundColor: value("backgroundColor"),
      radius: integer("radius", null), fontFamily: value("fontFamily"), position: value("position"),
      offsetX: integer("offsetX", null), offsetY: integer("offsetY", null), launcherIcon: value("launcherIcon"),
      title: value("title"), avatar: value("avatar"), welcomeMessage: value("welcomeMessage"),
      darkMode: value("darkMode"), poweredBy: data.get("poweredBy") === "on",
    };
    const starters = [0, 1, 2, 3].map((i) => value(`starter${i}`)).filter(Boolean);
    return { appearance, language: value("language") || "auto", strings, starters };
  }

  const frame = h("iframe", { src: `/widget/demo?agentId=${enc(agent.id)}`, title: "Widget preview", class: "widget-frame look-frame" });
  /** Show the unsaved settings in the preview's widget. */
  async function preview() {
    const widget = frame.contentWindow && frame.contentWindow.agentsvc;
    if (!widget || !widget.ready) return;
    const wanted = settings();
    // The demo page is in English: "automatic" shows as a visitor with an English page sees it.
    const code = wanted.language === "auto" ? "en" : wanted.language;
    const [own, english] = await Promise.all([table(code), table("en")]);
    // Every text of that language, so a removed override shows its built-in text again (but
    // not the title, which the Title field sets for every language).
    const { title, ...builtIn } = { ...english, ...own };
    const texts = { ...builtIn, ...(strings[code] || {}) };
    await widget.configure({ appearance: wanted.appearance, language: code, strings: { [code]: texts }, starters: wanted.starters, showSources: form.elements.showSources.checked });
    frame.dataset.previewed = String(Number(frame.dataset.previewed || 0) + 1);
  }
  frame.addEventListener("load", () => {
    const win = frame.contentWindow;
    // The widget announces no DOM event when it is ready: look at its flag a few times a second.
    const poll = setInterval(() => {
      if (!(win.agentsvc && win.agentsvc.ready)) return;
      clearInterval(poll);
      preview().then(() => win.agentsvc.open({ focus: false }));
    }, 100);
    setTimeout(() => clearInterval(poll), 15000);
  });
  form.addEventListener("input", () => preview());
  form.addEventListener("change", () => preview());

  onSubmit(form, async () => {
    const body = settings();
    for (const code of Object.keys(body.strings)) body.strings[code] = { ...body.strings[code] };
    const updated = await patch(`/agents/${enc(agent.id)}`, { widget: body, showSources: form.elements.showSources.checked });
    Object.assign(saved, updated.widget);
    toast("Appearance saved");
  });
  showTexts();
  return h("section.card.look", { "aria-label": "Appearance" },
    h("h2", "Appearance"),
    h("p.muted", "How the chat widget looks and speaks on your site. The preview shows your changes before you save them; the snippet on a page can still override any of it (see the Widget page)."),
    h("div.look-grid", form, h("div.look-preview", { tabindex: "0", role: "region", "aria-label": "Live preview" }, h("h3", "Live preview"), frame)));
}

// The Widget page.

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
  const code = h("pre.snippet", { id: "embed-snippet", tabindex: "0" }, snippet);
  const copy = button("Copy snippet", async () => {
    const ok = await copyText(snippet);
    copy.textContent = ok ? "Copied" : "Copy failed";
    toast(ok ? "Snippet copied to the clipboard" : "Select the snippet and copy it by hand", ok ? "ok" : "error");
    setTimeout(() => (copy.textContent = "Copy snippet"), 2000);
  }, { class: null });
  const demo = `/widget/demo?agentId=${enc(agent.id)}`;
  const frame = h("iframe", { src: demo, title: "Widget preview", class: "widget-frame", loading: "lazy" });
  mount(page,
    pageHeader(`Widget of ${agent.name}`, "Paste this before </body> on every page where the chat should appear."),
    h("section.card", h("div.row", h("h2", "Embed snippet"), h("span.spacer"), copy), code,
      h("p.muted", "Identify signed-in visitors with userId, userEmail, userName (and userHash when the agent has an identity secret)."),
      h("p.muted", "The widget's look, language, texts and starter questions are set on ", h("a", { href: `#/agents/${enc(agent.id)}` }, "the agent's page"),
        " (Appearance); a page can override them with appearance, language, strings and starters in its configuration.")),
    h("section.card", h("div.row", h("h2", "Live preview"), h("span.spacer"), h("a", { href: demo, target: "_blank", rel: "noopener" }, "Open the demo page")), frame));
}
