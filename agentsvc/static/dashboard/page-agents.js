// Agents: list, create (owner), edit model/prompt/temperature, handoff, the widget's look,
// delete (owner); an agent's versions (in this module, as they share its words: each module
// is gzipped alone).

import { del, describe, enc, get, patch, post } from "./api.js";
import { beside, button, confirmDialog, field, h, mount, select, table, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";
import { languageName, modelName } from "./labels.js";
import { widgetLookSection } from "./page-widget.js";
import { chatPanel } from "./chat.js";
import { renderExperiments } from "./page-experiments.js";
import { renderEvals } from "./page-evals.js";

// The API's defaults for a new agent (services/agents/registry.py, language.py).
const DEFAULT_TEMPERATURE = 70;
const DEFAULT_LANGUAGE = "english";
let providers = null;
let languages = null;

/** Provider names from the model id pattern of the OpenAPI document (unescaped). */
export function providersFromPattern(pattern) {
  const match = (pattern || "").match(/\|\(([^)]*)\)\/\.\+\)\$$/);
  return match ? match[1].split("|").map((p) => p.replace(/\\(.)/g, "$1")) : [];
}

/**
 * The configured providers, read from the public OpenAPI document: its model id pattern is
 * built from them (`^(builtin|(ollama|openai)/.+)$`), so suggestions match what is accepted.
 */
async function modelProviders() {
  if (providers === null) {
    try {
      const doc = await get("/openapi.json");
      const props = doc.components.schemas.AgentCreate.properties;
      providers = providersFromPattern(props.model.pattern);
      languages = props.language.enum || [];
    } catch {
      providers = [];
      languages = [];
    }
  }
  return providers;
}

/** The language choice: Snowball's languages from the same document, by their names. */
function languageSelect(value) {
  const current = value || DEFAULT_LANGUAGE;
  const names = languages && languages.length ? languages : [current];
  return h("select", { name: "language" }, names.map((name) => h("option", { value: name, selected: name === current }, languageName(name))));
}

/**
 * The model choices as [value, label]: builtin, the models this team's agents use at the
 * configured providers, the current model if neither, then "another model" per provider
 * (value "PROVIDER/", completed by a model name typed beside it).
 */
export function modelChoices(providerNames, inUse, current) {
  const options = [["builtin", "Builtin (offline: answers from the prompt and the knowledge)"]];
  const listed = new Set(["builtin"]);
  const configured = (id) => providerNames.some((p) => id.startsWith(`${p}/`) && id.length > p.length + 1);
  for (const id of [...new Set(inUse)].filter(configured).sort()) {
    const cut = id.indexOf("/");
    options.push([id, `${id.slice(cut + 1)} at ${id.slice(0, cut)}`]);
    listed.add(id);
  }
  if (current && !listed.has(current)) options.push([current, `${current} (current)`]);
  for (const p of providerNames) options.push([`${p}/`, `Another model at ${p}…`]);
  return options;
}

/** The model: a list of choices, with a model name field for "another model at PROVIDER". */
function modelFields(agent, names, inUse) {
  const isNew = !agent.id;
  // A new agent without a choice gets the server's default model, as the API gives it.
  const options = (isNew && names.length ? [["", "This server's default model"]] : []).concat(modelChoices(names, inUse, agent.model));
  const picker = select(options, isNew ? (names.length ? "" : "builtin") : agent.model, { name: "model" });
  const other = h("input", { name: "modelName", autocomplete: "off", maxlength: 250, placeholder: "e.g. gpt-4o-mini" });
  const otherField = field("Model name", other, "The model's name at that provider, as its documentation writes it.");
  const sync = () => {
    const custom = picker.value.endsWith("/");
    otherField.hidden = !custom;
    other.required = custom;
    otherField.querySelector("label").textContent = custom ? `Model name at ${picker.value.slice(0, -1)}` : "Model name";
  };
  picker.addEventListener("change", sync);
  sync();
  const hint = names.length
    ? `Builtin answers offline. The others run at a provider of this server: ${names.join(", ")}.`
    : "Builtin answers offline, from the prompt and the knowledge. Other models need a provider in the server's configuration ([providers.NAME]).";
  return [field("Model", picker, hint), otherField];
}

function agentFields(agent, names, inUse) {
  const temperature = h("input", { name: "temperature", type: "range", min: 0, max: 100, step: 1, value: agent.temperature ?? DEFAULT_TEMPERATURE });
  const shown = h("output.range-value", { "aria-hidden": "true" }, String(temperature.value));
  temperature.addEventListener("input", () => (shown.textContent = temperature.value));
  const temperatureField = field("Temperature (0-100)", temperature, "0 is focused, 100 is creative.");
  beside(temperature, shown);
  return [
    field("Name", h("input", { name: "name", required: true, maxlength: 200, value: agent.name || "" })),
    modelFields(agent, names, inUse),
    temperatureField,
    field("Language", languageSelect(agent.language), "The language of the agent's prompt and knowledge: the builtin model and knowledge search match its word forms (ships, shipping)."),
    field("System prompt", h("textarea", { name: "systemPrompt", rows: 8 }, agent.systemPrompt || "")),
  ];
}

function agentBody(data) {
  const body = { name: String(data.get("name")).trim() };
  let model = String(data.get("model") ?? "").trim();
  if (model.endsWith("/")) {
    const name = String(data.get("modelName") ?? "").trim();
    if (!name) throw new Error("Model name: write the model's name at the provider");
    model += name;
  }
  if (model) body.model = model;
  const temperature = String(data.get("temperature")).trim();
  if (temperature !== "") body.temperature = Number(temperature);
  body.systemPrompt = String(data.get("systemPrompt"));
  const language = data.get("language");
  if (language) body.language = String(language);
  if (!body.name) throw new Error("Name: required");
  return body;
}

/** Where a save went: " in the draft", or " (version N)", the live version. */
const savedAs = (saved) => (saved.draft ? " in the draft" : ` (version ${saved.version})`);

const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/** Business hours as lines of text ("mon 09:00-17:00"), and back. */
export function hoursText(hours) {
  return hours ? hours.intervals.map((i) => `${i.day} ${i.start}-${i.end}`).join("\n") : "";
}
export function parseHours(text) {
  return text.split(/\n+/).map((line) => line.trim()).filter(Boolean).map((line) => {
    const m = line.toLowerCase().match(/^([a-z]{3})\s+(\d\d:\d\d)\s*-\s*(\d\d:\d\d)$/);
    if (!m || !DAYS.includes(m[1])) throw new Error(`business hours: "${line}" should read like "mon 09:00-17:00"`);
    return { day: m[1], start: m[2], end: m[3] };
  });
}

/** The time zones the browser knows (IANA names), the current one included. */
function zoneSelect(zone) {
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  const names = zones.includes(zone) ? zones : [zone, ...zones];
  return select(names.map((z) => [z, z.replace(/_/g, " ")]), zone, { name: "timezone" });
}

/** Handoff to a person: on/off, business hours, the offline message, notifications. */
function handoffForm(agent) {
  const hand = agent.handoff;
  const hours = hand.businessHours;
  const zone = hours ? hours.timezone : Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const form = onSubmit(h("form.stack.card", { "aria-label": "Handoff to a person" },
    h("h2", "Handoff to a person"),
    h("label", h("input", { type: "checkbox", name: "enabled", checked: hand.enabled }),
      " Visitors may ask for a person (the widget shows \"Talk to a person\"; the agent may also hand over by itself)"),
    field("Business hours", h("textarea", { name: "hours", rows: 4, placeholder: "mon 09:00-17:00\ntue 09:00-17:00" }, hoursText(hours)),
      "One line per interval; empty: always. Outside them the widget shows the offline message and asks for an e-mail address."),
    field("Time zone", zoneSelect(zone)),
    field("Offline message", h("textarea", { name: "offlineMessage", rows: 2 }, hand.offlineMessage)),
    h("label", h("input", { type: "checkbox", name: "email", checked: hand.notify.email }),
      " E-mail the members who asked for it (Inbox page) at each handoff"),
    field("Team chat webhook", h("input", { name: "teamChat", type: "url", value: hand.notify.teamChat || "", placeholder: "https://hooks.example.com/..." }),
      hand.notify.teamChatSecret ? ["Signed with ", h("code", hand.notify.teamChatSecret), " (Standard Webhooks)."] : "Each handoff is posted here, signed."),
    h("button", { type: "submit" }, "Save handoff settings")), async (data) => {
    const intervals = parseHours(String(data.get("hours")));
    const teamChat = String(data.get("teamChat")).trim();
    const saved = await patch(`/agents/${enc(agent.id)}`, {
      handoff: {
        enabled: data.get("enabled") === "on",
        businessHours: intervals.length ? { timezone: String(data.get("timezone")).trim(), intervals } : null,
        offlineMessage: String(data.get("offlineMessage")).trim() || hand.offlineMessage,
        notify: { email: data.get("email") === "on", teamChat: teamChat || null },
      },
    });
    toast(`Handoff settings saved${savedAs(saved)}`);
  });
  return form;
}

// ── Guardrails: what the agent hides, refuses and must not say, in plain words, and a box
// that tries them (the unsaved form) on any text without a model. ──

const KIND_WORDS = [["email", "E-mail addresses"], ["phone", "Phone numbers"], ["card", "Card numbers"], ["iban", "IBANs"]];
const lines = (text) => String(text).split("\n").map((s) => s.trim()).filter(Boolean);
const commas = (text) => String(text).split(",").map((s) => s.trim()).filter(Boolean);
const check = (name, label, on, value) => h("label", h("input", { type: "checkbox", name, value, checked: on }), ` ${label}`);

/** One blocked topic's fields (a fieldset the form reads in order). */
function topicFields(topic = { name: "", words: [], patterns: [], reply: "" }) {
  const set = h("fieldset.stack.topic", h("legend", "Blocked topic"),
    field("Name", h("input", { name: "topicName", maxlength: 40, value: topic.name })),
    field("Words or phrases, separated by commas", h("input", { name: "topicWords", value: topic.words.join(", ") })),
    field("Patterns, one per line", h("textarea", { name: "topicPatterns", rows: 2 }, topic.patterns.join("\n"))),
    field("Reply instead of the model", h("input", { name: "topicReply", maxlength: 2000, value: topic.reply })));
  set.append(button("Remove this topic", () => set.remove(), { class: "small secondary" }));
  return set;
}

/** The form's guardrails as the API takes them. */
function guardrailsBody(form) {
  const data = new FormData(form);
  const patterns = lines(data.get("ownPatterns")).map((line) => {
    const cut = line.indexOf("=");
    if (cut < 1) throw new Error(`Your own patterns: "${line}" should read like "customer number = CU-[0-9]{6}"`);
    return { name: line.slice(0, cut).trim(), pattern: line.slice(cut + 1).trim() };
  });
  const topics = data.getAll("topicName").map((name, i) => ({
    name: String(name).trim(), words: commas(data.getAll("topicWords")[i]), patterns: lines(data.getAll("topicPatterns")[i]), reply: String(data.getAll("topicReply")[i]).trim() || undefined,
  }));
  const max = String(data.get("maxChars")).trim();
  return {
    redact: { kinds: data.getAll("kind"), patterns },
    redactFrom: data.getAll("from"),
    blockedTopics: topics,
    mustNotSay: { words: commas(data.get("mustWords")), patterns: lines(data.get("mustPatterns")), fallback: String(data.get("fallback")).trim() || undefined },
    maxVisitorMessageChars: max ? Number(max) : null,
  };
}

/** What the try box found, in words. */
function tried(r) {
  const said = (hit) => (hit.word ? `the word “${hit.word}”` : `the pattern “${hit.pattern}”`);
  const found = Object.entries(r.redactions).map(([kind, n]) => `${n} ${kind}`).join(", ");
  return h("ul",
    r.tooLong ? h("li", `Too long: over ${r.maxVisitorMessageChars} characters.`) : null,
    r.blocked ? h("li", `Blocked topic “${r.blocked.rule}” (${said(r.blocked)}), answered `, h("q", r.blocked.reply)) : null,
    found ? [h("li", `Hidden: ${found}.`), h("li", "The model reads: ", h("q", r.modelSees)), h("li", "Stored: ", h("q", r.stored))] : h("li", "Nothing to hide."),
    r.mustNotSay ? h("li", `As an answer: ${said(r.mustNotSay)}, replaced by `, h("q", r.mustNotSay.fallback)) : h("li", "As an answer: nothing it must not say."));
}

/** The Guardrails section: the settings, saved with PATCH (a version, or the draft), and the
 *  try box. */
function guardrailsForm(agent) {
  const g = agent.guardrails;
  const topics = h("div.stack", g.blockedTopics.map(topicFields));
  const form = onSubmit(h("form.stack.card", { "aria-label": "Guardrails" },
    h("h2", "Guardrails"),
    h("p.muted", "Each hit is counted under Analytics and noted in its conversation."),
    h("fieldset.stack", h("legend", "Hide personal data"), KIND_WORDS.map(([kind, label]) => check("kind", label, g.redact.kinds.includes(kind), kind)),
      field("Your own patterns, one per line", h("textarea", { name: "ownPatterns", rows: 2, placeholder: "customer number = CU-[0-9]{6}" }, g.redact.patterns.map((p) => `${p.name} = ${p.pattern}`).join("\n"))),
      check("from", "Hide it from the model", g.redactFrom.includes("model"), "model"),
      check("from", "Hide it in stored conversations, exports and webhooks", g.redactFrom.includes("storage"), "storage")),
    h("fieldset.stack", h("legend", "Blocked topics"), topics, button("Add a topic", () => topics.append(topicFields()), { class: "secondary" })),
    h("fieldset.stack", h("legend", "Never say"),
      field("Words or phrases, separated by commas", h("input", { name: "mustWords", value: g.mustNotSay.words.join(", ") })),
      field("Patterns, one per line", h("textarea", { name: "mustPatterns", rows: 2 }, g.mustNotSay.patterns.join("\n"))),
      field("Answer instead (the conversation is flagged)", h("textarea", { name: "fallback", rows: 2 }, g.mustNotSay.fallback))),
    field("Longest visitor message (characters)", h("input", { name: "maxChars", type: "number", min: 1, max: 100000, value: g.maxVisitorMessageChars ?? "", placeholder: "no limit" })),
    h("button", { type: "submit" }, "Save guardrails")), async () => {
    const saved = await patch(`/agents/${enc(agent.id)}`, { guardrails: guardrailsBody(form) });
    toast(`Guardrails saved${savedAs(saved)}`);
  });
  const result = h("div", { role: "status" });
  const box = onSubmit(h("form.stack.card", { "aria-label": "Try the guardrails" },
    h("h2", "Try them"),
    field("Text", h("textarea", { name: "text", rows: 3, required: true, maxlength: 100000 }), "As a visitor's message and as an answer, with the settings above, saved or not."),
    h("button", { type: "submit" }, "Try it"), result), async (data) => {
    mount(result, tried(await post(`/agents/${enc(agent.id)}/guardrails/try`, { text: String(data.get("text")), guardrails: guardrailsBody(form) })));
  });
  return [form, box];
}

/** How long the agent keeps conversations and submissions (the owner sets it). */
function retentionForm(ctx, agent) {
  const days = agent.retentionDays;
  const hint = "Conversations idle this long and submissions this old are deleted (with their files) by an hourly job. Empty: keep everything.";
  if (!ctx.isOwner) {
    return h("section.stack.card", { "aria-label": "Data retention" },
      h("h2", "Data retention"),
      h("p", days ? `Conversations and submissions are kept ${days} days.` : "Conversations and submissions are kept until deleted."),
      h("p.muted", "Only the team owner changes this."));
  }
  return onSubmit(h("form.stack.card", { "aria-label": "Data retention" },
    h("h2", "Data retention"),
    field("Keep conversations and submissions for (days)", h("input", { name: "retentionDays", type: "number", min: 1, max: 36500, step: 1, value: days ?? "", placeholder: "forever" }), hint),
    h("button", { type: "submit" }, "Save retention")), async (data) => {
    const text = String(data.get("retentionDays")).trim();
    const value = text === "" ? null : Number(text);
    if (value !== null && !(Number.isInteger(value) && value >= 1 && value <= 36500)) {
      throw new Error("retentionDays: a whole number of days from 1 to 36500, or empty");
    }
    const saved = await patch(`/agents/${enc(agent.id)}`, { retentionDays: value });
    toast(saved.retentionDays ? `Kept ${saved.retentionDays} days` : "Kept until deleted");
  });
}

/** The list of agents, with a create form for the owner. */
export async function renderAgents(ctx, page) {
  await ctx.refreshAgents();
  const columns = [
    ["Name", (a) => h("a", { href: `#/agents/${enc(a.id)}` }, a.name)],
    ["Short name", (a) => h("code", a.slug)],
    ["Model", (a) => modelName(a.model)],
    ["Created", (a) => when(a.createdAt)],
  ];
  mount(page,
    pageHeader("Agents", "Each agent has a model, a system prompt and a temperature.",
      ctx.isOwner ? h("a.button", { href: "#/agents/new" }, "New agent") : null),
    table(columns, ctx.agents, ctx.isOwner ? "No agents yet: create the first one." : "No agents yet: the team owner creates them."));
}

/** One agent: the create form (id "new"), the edit form with delete, or (#/agents/ID/versions,
 *  /experiments, /evals) its versions, its experiments or its evaluations. */
export async function renderAgent(ctx, page, id, part, chosen, more) {
  if (part === "evals") return renderEvals(ctx, page, id, chosen, more);
  if (part === "versions") return renderVersions(ctx, page, id, chosen);
  if (part === "experiments") return renderExperiments(ctx, page, id, chosen);
  if (id === "new") {
    if (!ctx.isOwner) {
      mount(page, pageHeader("New agent"), h("p.empty", "Only the team owner creates agents."));
      return;
    }
    const names = await modelProviders();
    const form = onSubmit(h("form.stack.card", { "aria-label": "New agent" }, agentFields({}, names, ctx.agents.map((a) => a.model)), h("button", { type: "submit" }, "Create agent")), async (data) => {
      const agent = await post("/agents", agentBody(data));
      toast(`Agent ${agent.name} created`);
      ctx.setAgent(agent.id);
      await ctx.refreshAgents();
      ctx.navigate(`#/agents/${enc(agent.id)}`);
    });
    mount(page, pageHeader("New agent"), form);
    return;
  }
  const [agent, names] = await Promise.all([get(`/agents/${enc(id)}`), modelProviders()]);
  if (ctx.agentId !== agent.id) ctx.setAgent(agent.id);
  // With a draft waiting, the forms show (and change) the draft.
  const shown = agent.draft ? { ...agent, ...agent.draft.snapshot } : agent;
  const versions = `#/agents/${enc(agent.id)}/versions`;
  const drafting = field("Save changes as a draft first", h("input", { type: "checkbox", name: "versioning", checked: agent.versioning === "draft" }),
    "Changes then wait in a draft: try it, publish it or discard it under Versions. Visitors keep the live version meanwhile.");
  const form = onSubmit(h("form.stack.card", { "aria-label": "Agent settings" }, agentFields(shown, names, ctx.agents.map((a) => a.model)), drafting, h("button", { type: "submit" }, "Save changes")), async (data) => {
    const saved = await patch(`/agents/${enc(id)}`, { ...agentBody(data), versioning: data.get("versioning") ? "draft" : "live" });
    toast(`Saved ${saved.name}${savedAs(saved)}`);
    await ctx.refreshAgents();
    if (saved.versioning === "draft" || agent.versioning === "draft") ctx.navigate(location.hash); // the draft's notice
  });
  const remove = ctx.isOwner
    ? button("Delete agent", async () => {
        if (!(await confirmDialog(`Delete agent "${agent.name}" with its conversations, tools and triggers? This cannot be undone.`, "Delete agent"))) return;
        await del(`/agents/${enc(id)}`);
        toast(`Deleted ${agent.name}`);
        await ctx.refreshAgents();
        ctx.navigate("#/agents");
      }, { class: "danger" })
    : null;
  mount(page,
    pageHeader(agent.name, `Short name ${agent.slug} · version ${agent.version} · created ${when(agent.createdAt)} · updated ${when(agent.updatedAt)}`,
      h("a.button.secondary", { href: versions }, "Versions"),
      h("a.button.secondary", { href: `#/agents/${enc(agent.id)}/experiments` }, "Experiments"),
      h("a.button.secondary", { href: `#/agents/${enc(agent.id)}/evals` }, "Evaluations"),
      h("a.button.secondary", { href: "#/preview" }, "Chat preview"),
      h("a.button.secondary", { href: "#/tools" }, "Tools"),
      remove),
    h("p.muted", "Agent id: ", h("code", agent.id)),
    agent.draft ? h("p.notice", `A draft waits: visitors still talk to version ${agent.version}; the settings below are the draft's. `, h("a", { href: `${versions}/draft` }, "Try it, publish it or discard it under Versions")) : null,
    form,
    handoffForm(shown),
    guardrailsForm(shown),
    widgetLookSection(agent),
    retentionForm(ctx, agent));
}

// ── An agent's versions (#/agents/ID/versions[/N]): the timeline, newest first; what the
// chosen version changed against the one before it; restoring one, as a new version. ──

const onOff = (on) => (on ? "on" : "off");
const liveTag = (v) => (v.live ? h("span.tag.good", "Live") : null);

/** Who made a version: the member's name, else the API key's, else the server (never an
 *  e-mail address: the API gives none). */
export const authorName = (a) => [a.name, a.keyName && `API key “${a.keyName}”`].filter(Boolean).join(" with the ") || (a.via === "system" ? "The server" : "A member");

/** What a version holds, in words, as [label, text]: all but the system prompt and the
 *  tools. */
export function settingWords(s) {
  const hand = s.handoff || {};
  const hours = hand.businessHours;
  return [
    ["Model", modelName(s.model)],
    ["Temperature", String(s.temperature)],
    ["Language", languageName(s.language)],
    ["Handoff to a person", onOff(hand.enabled)],
    ["Business hours", hours ? `${hoursText(hours).replace(/\n/g, ", ")} (${hours.timezone.replace(/_/g, " ")})` : "always"],
    ["Offline message", hand.offlineMessage],
    ["E-mail the members at each handoff", onOff(hand.notify?.email)],
    ["Team chat webhook", hand.notify?.teamChat || "none"],
    ["Guardrails", guardWords(s.guardrails)],
  ];
}

/** A version's guardrails in a line: what it hides, blocks, never says, the longest message. */
function guardWords(g) {
  if (!g) return "none";
  const hidden = [...g.redact.kinds, ...g.redact.patterns.map((p) => p.name)];
  const never = g.mustNotSay.words.length + g.mustNotSay.patterns.length;
  return [hidden.length && `hides ${hidden.join(", ")}`, g.blockedTopics.length && `blocks ${g.blockedTopics.map((x) => x.name).join(", ")}`,
    never && `${never} never-say rules`, g.maxVisitorMessageChars && `messages up to ${g.maxVisitorMessageChars} characters`].filter(Boolean).join("; ") || "none";
}

const MARKS = { "-": ["removed", "del", "−", "Removed: "], "+": ["added", "ins", "+", "Added: "] };

/** A unified diff's lines: removed ones struck through and marked "−", added ones marked
 *  "+" (and said "Removed:", "Added:" to a screen reader), lines left out as "…". */
export function lineDiff(lines) {
  return h("div.line-diff.code", { role: "group", "aria-label": "System prompt, line by line" }, lines.map((line, i) => {
    if (line[0] === "@") return i || !/^@@ -[01]\D/.test(line) ? h("div.diff-line", "…") : null;
    const [kind, tag, mark, said] = MARKS[line[0]] || ["", "span", " ", ""];
    return h(`div.diff-line.${kind}`, h("span", { "aria-hidden": "true" }, mark), h(tag, said && h("span.sr-only", said), line.slice(1)));
  }));
}

/** What changed since version `prev`: settings as "before → after", the tools added,
 *  removed or changed, the system prompt line by line (whole, when too long to compare). */
function changesSince(prev, changes) {
  const before = {};
  const after = {};
  for (const c of changes) [before[c.field], after[c.field]] = [c.before, c.after];
  const was = settingWords(before);
  const rows = settingWords(after).map(([label, text], i) => text !== was[i][1] && [label, `${was[i][1]} → ${text}`]).filter(Boolean);
  const tools = changes.find((c) => c.field === "tools");
  if (tools) rows.push(["Tools", ["added", "removed", "changed"].filter((k) => tools[k]?.length).map((k) => `${k} ${tools[k].join(", ")}`).join("; ")]);
  const prompt = changes.find((c) => c.field === "systemPrompt");
  return [
    h("h3", `What changed since version ${prev}`),
    changes.length ? null : h("p.muted", "Nothing the agent does."),
    rows.length ? h("ul", rows.map(([label, text]) => h("li", h("strong", label), `: ${text}`))) : null,
    prompt ? [h("h3", "System prompt"), prompt.lines ? lineDiff(prompt.lines) : h("pre", prompt.after)] : null,
  ];
}

/** A version's time (the viewer's), who made it and its note. */
const facts = (v) => h("span.facts", h("time", { datetime: v.createdAt }, when(v.createdAt)), ` · ${authorName(v.author)}`, v.note ? h("em", v.note) : null);
/** The draft as the timeline shows it: its time, the version it started from. */
const draftEntry = (d) => ({ ...d, number: "draft", createdAt: d.updatedAt, author: { name: `from version ${d.basedOn}` } });
const title = (n) => (n === "draft" ? "Draft" : `Version ${n}`);

/** The draft's actions: publish (with a note), discard, and a chat with it. */
function draftActions(agent, done, owner) {
  const refused = h("div");
  const go = async (body) => {
    const result = await post(`/agents/${enc(agent.id)}/publish`, body);
    await done(`Version ${result.version.number} is now live: visitors get the draft's changes.`);
  };
  // Refused by the check before publishing (409): its words, and the owner may go on.
  const publish = onSubmit(h("form.row", { "aria-label": "Publish the draft" },
    field("Note (optional)", h("input", { name: "note", maxlength: 500, placeholder: "Longer opening hours" }), "Once published, visitors talk to the draft."),
    h("button", { type: "submit" }, "Publish")), (data) => go({ note: data.get("note") }).catch((err) => {
    if (err.status !== 409) throw err;
    mount(refused, h("p.form-error", { role: "alert" }, describe(err).replace(/ \(run [\w-]+\)/, "")), // its run's id: not for people
      owner ? actionButton("Publish anyway", () => go({ note: data.get("note"), force: true }), { class: "danger" }) : h("p.muted", "Only the team owner can publish it anyway."));
  }));
  const discard = actionButton("Discard the draft", async () => {
    if (!(await confirmDialog("Discard the draft? Its changes are lost; the live agent stays as it is.", "Discard the draft"))) return;
    await del(`/agents/${enc(agent.id)}/draft`);
    await done("The draft is discarded.");
  }, { class: "danger" });
  return [publish, refused, discard, chatPanel(agent.id, { title: "Try the draft", version: "draft" }).el];
}

/** The chosen version (or the draft): what it changed against the one before it (the
 *  draft: against the live one), all it holds, and Restore (the draft: Publish). */
async function versionDetail(agent, n, done, owner) {
  const path = `/agents/${enc(agent.id)}/versions/`;
  const prev = n === "draft" ? agent.version : n - 1;
  const [v, diff] = await Promise.all([n === "draft" ? draftEntry(agent.draft) : get(path + n), prev && get(`${path}${prev}/diff/${n}`)]);
  const restore = actionButton("Restore this version", async () => {
    const question = `The agent will answer as in version ${n} again. This is saved as a new version; nothing is deleted.`;
    if (!(await confirmDialog(question, `Restore version ${n}`, null))) return;
    const result = await post(`${path}${n}/restore`);
    await done(result.restored ? `Version ${result.version.number} is now live: the agent answers as in version ${n} again.` : `The agent answers as in version ${n} already.`);
  });
  return [
    h("h2", { tabindex: "-1" }, `${title(n)} `, liveTag(v)),
    facts(v),
    diff ? changesSince(prev, diff.changes) : h("p", "The first version kept: all it holds is below."),
    h("details", { open: !diff }, h("summary", "All settings"),
      h("dl.keys", settingWords(v.snapshot).concat(v.snapshot.tools ? [["Tools", v.snapshot.tools.map((t) => t.name).join(", ") || "none"]] : []).map(([label, text]) => [h("dt", label), h("dd", text)])),
      h("pre", v.snapshot.systemPrompt)),
    n === "draft" ? draftActions(agent, done, owner) : v.live ? h("p.muted", "This is the live version: the agent answers with it now.") : restore,
  ];
}

/** The Versions page of one agent; `chosen`: the version named in the address. */
async function renderVersions(ctx, page, id, chosen) {
  const path = `/agents/${enc(id)}/versions`;
  const load = () => Promise.all([get(`/agents/${enc(id)}`), get(path)]);
  let [agent, first] = await load();
  if (ctx.agentId !== agent.id) ctx.setAgent(agent.id);
  const list = h("ol.timeline");
  const detail = h("section.card.stack", { "aria-label": "The chosen version" });
  const notice = h("div", { role: "status" });
  let [versions, next, shown, seq] = [first.data, first.pagination.nextCursor, Number(chosen) || chosen, 0];
  const older = async () => {
    const more = await get(`${path}?cursor=${enc(next)}`);
    [versions, next] = [versions.concat(more.data), more.pagination.nextCursor];
    draw();
  };
  const draw = () => {
    if (shown === "draft" ? !agent.draft : !shown) shown = agent.draft ? "draft" : agent.version; // at first, the newest
    mount(list, (agent.draft ? [draftEntry(agent.draft)] : []).concat(versions).map((v) => h("li", h("button", { type: "button", "aria-current": v.number === shown && "true", onclick: () => choose(v.number) },
      h("strong", `${title(v.number)} `, liveTag(v)), facts(v)))), next ? h("li", button("Show older versions", older)) : null);
  };
  const show = async (focus) => {
    const mine = ++seq;
    const parts = await versionDetail(agent, shown, done, ctx.isOwner).catch((err) => h("p.form-error", { role: "alert" }, describe(err)));
    if (mine !== seq) return;
    mount(detail, parts);
    if (focus) detail.querySelector("h2")?.focus(); // scrolled to, below the timeline (narrow screens)
  };
  const choose = (n) => {
    shown = n;
    draw();
    history.replaceState(null, "", `#/agents/${enc(agent.id)}/versions/${shown}`);
    show(true);
  };
  /** After a restore, publish or discard: say what happened, show the live version. */
  const done = async (said) => {
    mount(notice, h("p.notice", said));
    [agent, first] = await load();
    [versions, next] = [first.data, first.pagination.nextCursor];
    choose(agent.version);
    await ctx.refreshAgents();
  };
  draw();
  await show(false);
  mount(page,
    pageHeader(`Versions of ${agent.name}`, "Each change of what the agent does is kept as a version. Choose one to see what it changed; restore it to make the agent answer as it did then.",
      h("a.button.secondary", { href: `#/agents/${enc(agent.id)}` }, "Back to the agent")),
    notice,
    h("div.versions", h("section.card", { "aria-label": "Timeline" }, h("h2", "Timeline"), list), detail));
}
