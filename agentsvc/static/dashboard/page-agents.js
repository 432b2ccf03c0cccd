// Agents: list, create (owner), edit model/prompt/temperature, delete (owner).

import { del, get, patch, post } from "./api.js";
import { confirmDialog, field, h, mount, table, toast, when } from "./dom.js";
import { onSubmit, pageHeader } from "./forms.js";

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

/** The language choice: Snowball's names, read from the same OpenAPI document. */
function languageSelect(value) {
  const current = value || "english";
  const names = languages && languages.length ? languages : [current];
  return h("select", { name: "language" }, names.map((name) => h("option", { value: name, selected: name === current }, name)));
}

function modelInput(value, names) {
  const list = h("datalist", { id: "model-options" }, h("option", { value: "builtin" }), names.map((p) => h("option", { value: `${p}/` })));
  const input = h("input", { name: "model", list: "model-options", value: value || "", placeholder: "builtin", autocomplete: "off" });
  return [input, list];
}

function agentFields(agent, names) {
  const [model, list] = modelInput(agent.model, names);
  const temperature = h("input", { name: "temperature", type: "number", min: 0, max: 100, step: 1, value: agent.temperature ?? 50 });
  return [
    field("Name", h("input", { name: "name", required: true, maxlength: 200, value: agent.name || "" })),
    field("Model", model, names.length
      ? `builtin (offline), or PROVIDER/MODEL with a configured provider: ${names.join(", ")}.`
      : "builtin (offline). Other models need a provider in the configuration ([providers.NAME])."),
    list,
    field("Temperature (0-100)", temperature, "0 is focused, 100 is creative."),
    field("Language", languageSelect(agent.language), "The language of the agent's prompt and knowledge: the builtin model and knowledge search match its word forms (ships, shipping)."),
    field("System prompt", h("textarea", { name: "systemPrompt", rows: 8 }, agent.systemPrompt || "")),
  ];
}

function agentBody(data) {
  const body = { name: String(data.get("name")).trim() };
  const model = String(data.get("model")).trim();
  if (model) body.model = model;
  const temperature = String(data.get("temperature")).trim();
  if (temperature !== "") body.temperature = Number(temperature);
  body.systemPrompt = String(data.get("systemPrompt"));
  const language = data.get("language");
  if (language) body.language = String(language);
  if (!body.name) throw new Error("name: required");
  if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 100)) {
    throw new Error("temperature: a number from 0 to 100");
  }
  return body;
}

/** The list of agents, with a create form for the owner. */
export async function renderAgents(ctx, page) {
  await ctx.refreshAgents();
  const columns = [
    { label: "Name", cell: (a) => h("a", { href: `#/agents/${encodeURIComponent(a.id)}` }, a.name) },
    { label: "Slug", cell: (a) => h("code", {}, a.slug) },
    { label: "Model", cell: (a) => a.model },
    { label: "Created", cell: (a) => when(a.createdAt) },
  ];
  mount(page,
    pageHeader("Agents", "Each agent has a model, a system prompt and a temperature.",
      ctx.isOwner ? h("a", { class: "button", href: "#/agents/new" }, "New agent") : null),
    table(columns, ctx.agents, ctx.isOwner ? "No agents yet: create the first one." : "No agents yet: the team owner creates them."));
}

/** One agent: the create form (id "new") or the edit form with delete. */
export async function renderAgent(ctx, page, id) {
  if (id === "new") {
    if (!ctx.isOwner) {
      mount(page, pageHeader("New agent"), h("p", { class: "empty" }, "Only the team owner creates agents."));
      return;
    }
    const names = await modelProviders();
    const form = onSubmit(h("form", { class: "stack card" }, agentFields({}, names), h("button", { type: "submit" }, "Create agent")), async (data) => {
      const agent = await post("/agents", agentBody(data));
      toast(`Agent ${agent.name} created`);
      ctx.setAgent(agent.id);
      await ctx.refreshAgents();
      ctx.navigate(`#/agents/${encodeURIComponent(agent.id)}`);
    });
    mount(page, pageHeader("New agent"), form);
    return;
  }
  const [agent, names] = await Promise.all([get(`/agents/${encodeURIComponent(id)}`), modelProviders()]);
  if (ctx.agentId !== agent.id) ctx.setAgent(agent.id);
  const form = onSubmit(h("form", { class: "stack card", "aria-label": "Agent settings" }, agentFields(agent, names), h("button", { type: "submit" }, "Save changes")), async (data) => {
    const saved = await patch(`/agents/${encodeURIComponent(id)}`, agentBody(data));
    toast(`Saved ${saved.name}`);
    await ctx.refreshAgents();
  });
  const remove = ctx.isOwner
    ? h("button", {
        type: "button",
        class: "danger",
        onclick: async () => {
          if (!(await confirmDialog(`Delete agent "${agent.name}" with its conversations, tools and triggers? This cannot be undone.`, "Delete agent"))) return;
          await del(`/agents/${encodeURIComponent(id)}`);
          toast(`Deleted ${agent.name}`);
          await ctx.refreshAgents();
          ctx.navigate("#/agents");
        },
      }, "Delete agent")
    : null;
  mount(page,
    pageHeader(agent.name, `Slug ${agent.slug} · created ${when(agent.createdAt)} · updated ${when(agent.updatedAt)}`,
      h("a", { class: "button secondary", href: "#/preview" }, "Chat preview"),
      h("a", { class: "button secondary", href: "#/tools" }, "Tools"),
      remove),
    h("p", { class: "muted" }, "Agent id: ", h("code", {}, agent.id)),
    form);
}
