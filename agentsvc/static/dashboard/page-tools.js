// Tools: list with plan limits, create and edit all four types with builders (tool input,
// form fields with a live preview, post actions, result display) and their JSON views, the
// MCP server's tool checklist, test run.

import { chatStream, enc, get, post, put, qs } from "./api.js";
import { actionsBuilder, actionsFit, builderWithJson, displayBuilder, displayFit, formBuilder, formPreview, headersEditor, paramsBuilder, paramsFit } from "./builders.js";
import { button, field, h, mount, parseJsonField, pretty, select, table, toast, when } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";
import { EXECUTION_MODE, choices, toolType } from "./labels.js";
import { checkDisplayConfig, checkFormSchema, checkInputSchema, checkPostActions, exampleInput, isObject } from "./schema-check.js";

const EMPTY_SCHEMA = { type: "object", properties: {}, required: [] };
const EXAMPLE_FORM = {
  fields: [
    { name: "email", label: "E-mail", type: "email", validation: { required: { value: true, message: "Your e-mail, please" } } },
    { name: "message", label: "Message", type: "textarea" },
  ],
  submitLabel: "Send",
  successMessage: "Thanks! We will be in touch.",
};

/** The agent's tools with the plan's tool limit. */
export async function renderTools(ctx, page) {
  const agent = ctx.agent;
  const [tools, limits] = await Promise.all([
    get(`/tools${qs({ agentId: agent.id })}`),
    get(`/tools/limits${qs({ agentId: agent.id })}`),
  ]);
  const limitText = `${limits.current} of ${limits.limit === null ? "unlimited" : limits.limit} tools on the ${limits.planId} plan`;
  const columns = [
    ["Name", (t) => h("a", { href: `#/tools/${enc(t.id)}` }, t.name)],
    ["Type", (t) => h("span", { class: `tag ${t.executionType}` }, toolType(t.executionType) + (t.executionType === "mcp" ? ` · ${(t.mcpServerTools || []).length} tools` : ""))],
    ["Enabled", (t) => (t.isEnabled ? "Yes" : "No")],
    ["Description", (t) => t.description],
    ["Updated", (t) => when(t.updatedAt)],
  ];
  mount(page,
    pageHeader(`Tools of ${agent.name}`, limitText,
      limits.canCreate ? h("a.button", { href: "#/tools/new" }, "New tool") : h("span.muted", "Tool limit reached")),
    table(columns, tools, "No tools yet. Tools let the agent call an HTTP API or an MCP server, answer with a fixed response, or collect a form."));
}

function jsonArea(name, value, rows = 8) {
  return h("textarea", { name, rows, class: "code", spellcheck: "false" }, value);
}

/** Read the editor into an API body; throws on JSON that does not parse or look right. */
function toolBody(data, isUpdate, parts) {
  const type = data.get("executionType");
  const body = {
    name: String(data.get("name")).trim(),
    description: String(data.get("description")).trim(),
    executionType: type,
    isEnabled: data.get("isEnabled") === "on",
  };
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(body.name)) {
    throw new Error("name: lowercase letters, digits and underscores, starting with a letter (at most 64)");
  }
  if (!body.description) throw new Error("description: required (the model reads it)");
  if (type !== "form") {
    body.requiresApproval = data.get("requiresApproval") === "on";
    body.approvalTimeoutSeconds = Number(data.get("approvalTimeoutSeconds")) || null;
  }
  if (type !== "mcp") {
    // An MCP server's tools bring their own input schemas.
    body.inputSchema = parts.input.value();
  }
  const display = parts.display.value();
  if (display) body.displayConfig = display;
  else if (isUpdate) body.displayConfig = null;
  if (type === "mock") {
    body.mockResponse = String(data.get("mockResponse"));
  } else if (type === "http") {
    body.httpUrl = String(data.get("httpUrl")).trim();
    body.httpMethod = data.get("httpMethod");
    const headers = parts.httpHeaders.value();
    if (headers) body.httpHeaders = headers;
    else if (isUpdate) body.httpHeaders = null;
  } else if (type === "mcp") {
    body.mcpUrl = String(data.get("mcpUrl")).trim();
    const headers = parts.mcpHeaders.value();
    if (headers) body.mcpHeaders = headers;
    else if (isUpdate) body.mcpHeaders = null;
    if (data.get("mcpAll") === "on") {
      if (isUpdate) body.mcpTools = null;
    } else {
      body.mcpTools = data.getAll("mcpTool").map(String);
      if (!body.mcpTools.length) throw new Error("mcpTools: load the server's tools and tick at least one");
    }
  } else if (type === "form") {
    body.formSchema = parts.form.value();
    body.formExecutionMode = data.get("formExecutionMode");
    const url = String(data.get("formWebhookUrl")).trim();
    const handler = String(data.get("formClientHandler")).trim();
    if (url) body.formWebhookUrl = url;
    else if (isUpdate) body.formWebhookUrl = null;
    if (handler) body.formClientHandler = handler;
    else if (isUpdate) body.formClientHandler = null;
    const actions = parts.actions.value();
    if (actions) {
      body.formPostActions = actions;
    } else if (isUpdate) {
      body.formPostActions = null;
    }
  }
  return body;
}

/** The MCP section: address, headers, "Load tools" and the checklist of the server's tools. */
function mcpSection(t, headers) {
  const url = h("input", { name: "mcpUrl", value: t.mcpUrl || "", placeholder: "https://mcp.example.com/mcp" });
  const chosen = new Set(t.mcpTools || (t.mcpServerTools || []).map((f) => f.serverName));
  const all = h("input", { type: "checkbox", name: "mcpAll", checked: t.executionType === "mcp" ? t.mcpTools === null : true });
  const list = h("div.stack.mcp-tools", { role: "group", "aria-label": "The server's tools" });
  const status = h("small.hint", { "aria-live": "polite" });
  const showChecklist = (tools) => {
    mount(list, tools.map((tool) => {
      const box = h("input", { type: "checkbox", name: "mcpTool", value: tool.name, checked: !tool.problem && (all.checked || chosen.has(tool.name)), disabled: Boolean(tool.problem) || all.checked, dataset: { problem: tool.problem ? "1" : "" } });
      return h("label.check", box, " ", h("strong", tool.name),
        tool.exposedName ? h("span.muted", ` (the model sees ${tool.exposedName})`) : null,
        tool.description ? h("span", ` — ${tool.description}`) : null,
        tool.problem ? h("span.bad", ` Cannot be offered: ${tool.problem}`) : null);
    }));
  };
  all.addEventListener("change", () => {
    for (const box of list.querySelectorAll("input[name=mcpTool]")) {
      if (!box.dataset.problem) box.disabled = all.checked;
      if (all.checked && !box.disabled) box.checked = true;
    }
  });
  const load = button("Load tools", undefined, { class: "secondary" });
  load.addEventListener("click", async () => {
    status.textContent = "Asking the server…";
    status.className = "hint";
    try {
      const form = load.closest("form");
      const name = form ? String(new FormData(form).get("name") || "").trim() : "";
      const body = { mcpUrl: url.value.trim() };
      const given = headers.value();
      if (given) body.mcpHeaders = given;
      if (/^[a-z][a-z0-9_]{0,63}$/.test(name)) body.name = name;
      const tools = await post("/tools/mcp-preview", body);
      showChecklist(tools);
      status.textContent = `The server lists ${tools.length} tools.`;
      status.className = "hint good";
    } catch (err) {
      status.textContent = err.message;
      status.className = "hint bad";
    }
  });
  if (t.mcpServerTools) {
    showChecklist(t.mcpServerTools.map((f) => ({ name: f.serverName, description: f.description, exposedName: f.name, problem: null })));
  }
  return h("fieldset.stack", { dataset: { for: "mcp" } }, h("legend", "MCP server"),
    field("Server URL", url, "A Streamable HTTP MCP endpoint. Its tools are listed when the tool is saved; use Refresh when the server changes."),
    headers.el,
    h("div.row", load, status),
    field("Expose every tool", all, "Ticked: all the server's tools, including ones it adds later (at the next refresh). Each counts against the plan's tool limit."),
    list);
}

const formFits = (v) => isObject(v) && (v.fields === undefined || (Array.isArray(v.fields) && v.fields.every((f) => isObject(f) && (f.options === undefined || Array.isArray(f.options)))));

/** The builders of a tool (each with its JSON view); their values go into the API body. */
function toolParts(t, agentId, isForm) {
  const copy = (v) => (v === undefined || v === null ? null : structuredClone(v));
  const preview = formPreview(agentId);
  return {
    preview,
    input: builderWithJson({ name: "inputSchema", label: "Tool input: the parameters the model fills", jsonLabel: "Input schema (JSON Schema)", id: "input-schema", value: copy(t.inputSchema) || structuredClone(EMPTY_SCHEMA), builder: paramsBuilder, check: checkInputSchema, fits: paramsFit }),
    form: builderWithJson({ name: "formSchema", label: "Form fields", jsonLabel: "Form schema (JSON)", id: "form-schema", value: copy(t.formSchema) || structuredClone(EXAMPLE_FORM), builder: formBuilder, check: checkFormSchema, fits: formFits, onChange: (v) => isForm() && preview.show(v) }),
    actions: builderWithJson({ name: "formPostActions", label: "After each submission", jsonLabel: "Post actions (JSON list)", id: "post-actions", value: copy(t.formPostActions), builder: actionsBuilder, check: checkPostActions, fits: actionsFit, allowEmpty: true }),
    display: builderWithJson({ name: "displayConfig", label: "Result display", jsonLabel: "Display settings (JSON)", id: "display-config", value: copy(t.displayConfig), builder: displayBuilder, check: checkDisplayConfig, fits: displayFit, allowEmpty: true }),
  };
}

function toolEditor(tool, agentId) {
  const t = tool || {};
  const type = t.executionType || "mock";
  const typeSelect = select([["mock", "Fixed response: always the same answer"], ["http", "HTTP call: call an address"], ["form", "Form: collect data from the visitor"], ["mcp", "MCP server: the tools of an MCP server"]], type, { name: "executionType" });
  const parts = toolParts(t, agentId, () => typeSelect.value === "form");
  const secrets = "{{SECRET}} in a value is filled from the team's secrets when the call is made.";
  parts.httpHeaders = headersEditor("Headers", t.httpHeaders, secrets);
  parts.mcpHeaders = headersEditor("Headers sent to the server", t.mcpHeaders, secrets);
  const sections = {
    mock: h("fieldset.stack", { dataset: { for: "mock" } }, h("legend", "Fixed response"),
      field("Response", h("textarea", { name: "mockResponse", rows: 4 }, t.mockResponse || ""), "Returned as the tool's output, as is.")),
    http: h("fieldset.stack", { dataset: { for: "http" } }, h("legend", "HTTP call"),
      field("URL", h("input", { name: "httpUrl", value: t.httpUrl || "", placeholder: "https://api.example.com/orders/{orderId}" }), "{param} placeholders are filled from the input (URL-encoded); {{SECRET}} from the team's secrets."),
      field("Method", select(["GET", "POST", "PUT", "DELETE"].map((m) => [m, m]), t.httpMethod || "GET", { name: "httpMethod" }), "GET/DELETE send the rest of the input in the query string, POST/PUT as a JSON body."),
      parts.httpHeaders.el),
    form: h("fieldset.stack", { dataset: { for: "form" } }, h("legend", "Form"),
      h("div.form-build", parts.form.el, parts.preview.el),
      field("Delivery", select(choices(EXECUTION_MODE), t.formExecutionMode || "webhook", { name: "formExecutionMode" }), "Every submission is kept and listed under Form submissions, whatever the delivery."),
      field("Webhook URL", h("input", { name: "formWebhookUrl", value: t.formWebhookUrl || "", placeholder: "https://example.com/hooks/forms" })),
      field("Client handler name", h("input", { name: "formClientHandler", value: t.formClientHandler || "" }), "Registered in the page with agentsvc.registerFormHandler(name, fn). Left empty with client delivery, submissions are only stored."),
      parts.actions.el,
      t.formWebhookSecret ? h("p.muted", "Webhook signing secret: ", h("code", t.formWebhookSecret)) : null),
    mcp: mcpSection(t, parts.mcpHeaders),
  };
  const schemaField = parts.input.el;
  const approval = h("div.grid2",
    field("Requires approval", h("input", { type: "checkbox", name: "requiresApproval", checked: t.requiresApproval }), "A person from the team approves, edits or denies each call in the Inbox before it runs."),
    field("Decision within (seconds)", h("input", { type: "number", name: "approvalTimeoutSeconds", min: 1, max: 604800, value: t.approvalTimeoutSeconds || 3600 }), "Then the call is denied. 3600 is an hour."));
  const showSection = () => {
    for (const [name, el] of Object.entries(sections)) {
      el.hidden = name !== typeSelect.value;
      el.disabled = name !== typeSelect.value;
    }
    schemaField.hidden = typeSelect.value === "mcp";
    approval.hidden = typeSelect.value === "form"; // the visitor fills a form in themselves
    if (typeSelect.value === "form") parts.form.report(); // shows the preview
  };
  typeSelect.addEventListener("change", showSection);
  showSection();
  const nodes = [
    h("div.grid2",
      field("Name", h("input", { name: "name", required: true, value: t.name || "", pattern: "[a-z][a-z0-9_]{0,63}", placeholder: "lookup_order" }), "Lowercase with underscores; unique for this agent."),
      field("Type", typeSelect)),
    field("Description", h("textarea", { name: "description", rows: 2, required: true }, t.description || ""), "What the tool does; the model reads it to decide when to call it."),
    schemaField,
    field("Enabled", h("input", { type: "checkbox", name: "isEnabled", checked: t.isEnabled !== false })),
    approval,
    sections.mock, sections.http, sections.form, sections.mcp,
    parts.display.el,
  ];
  return { nodes, parts };
}

/** Run a tool once through the chat (the builtin model runs `/tool NAME {json}` directly);
 * an MCP tool runs one of its functions. */
function testRun(ctx, tool) {
  if (tool.executionType === "mcp") {
    const functions = tool.mcpServerTools || [];
    if (!functions.length) return h("p.muted.card", "The server exposes no tool yet: refresh it, or choose its tools above.");
    const holder = h("div");
    const choice = select(functions.map((f) => [f.name, f.name]), functions[0].name);
    const show = () => {
      const f = functions.find((x) => x.name === choice.value);
      mount(holder, testRun(ctx, { ...tool, executionType: "function", name: f.name, inputSchema: f.inputSchema }));
    };
    choice.addEventListener("change", show);
    show();
    return h("div.stack", field("Function to test", choice), holder);
  }
  const input = jsonArea("testInput", pretty(exampleInput(tool.inputSchema)), 4);
  const output = h("div.test-output", { role: "status", "aria-live": "polite" });
  const form = onSubmit(h("form.stack.card", { "aria-label": "Test run" },
    h("h2", "Test run"),
    h("p.muted", "Sends ", h("code", `/tool ${tool.name} {input}`), " to the agent in a new preview conversation. The builtin model runs the tool directly; other models receive it as a message."),
    field("Input (JSON)", input),
    h("button", { type: "submit" }, "Run tool"),
    output), async (data) => {
    const value = parseJsonField(data.get("testInput"), "input", { allowEmpty: true }) || {};
    mount(output, h("p.muted", "Running…"));
    const parts = [];
    let text = "";
    await chatStream({ agentId: tool.agentId, messages: [{ role: "user", content: `/tool ${tool.name} ${JSON.stringify(value)}` }] }, (name, ev) => {
      if (name === "approval_pending") mount(output, h("p.muted", "Waiting for a person to approve the call in the Inbox…"));
      else if (name === "tool_result") {
        parts.push(h("p", ev.isError ? "Tool error:" : "Tool output:"), h("pre", { class: ev.isError ? "bad" : "" }, typeof ev.output === "string" ? ev.output : pretty(ev.output)));
        if (ev.form) parts.push(h("p.muted", "A form tool shows its form to the visitor: try it in the Chat preview."));
      } else if (name === "content_block_delta" && ev.delta) {
        text += ev.delta.text || "";
      } else if (name === "error") {
        parts.push(h("p.bad", `Error: ${ev.error ? ev.error.message : "failed"}`));
      }
    });
    if (!parts.length) parts.push(h("p.muted", "The model did not call the tool."));
    if (text) parts.push(h("p", "Agent: ", text));
    mount(output, parts);
  });
  return form;
}

/** Create (id "new") or edit one tool. */
export async function renderTool(ctx, page, id) {
  if (id === "new") {
    if (!ctx.agent) {
      mount(page, pageHeader("New tool"), h("p.empty", "Create an agent first."));
      return;
    }
    const editor = toolEditor(null, ctx.agent.id);
    const form = onSubmit(h("form.stack.card", { "aria-label": "New tool" }, editor.nodes, h("button", { type: "submit" }, "Create tool")), async (data) => {
      const tool = await post("/tools", { agentId: ctx.agent.id, ...toolBody(data, false, editor.parts) });
      toast(`Tool ${tool.name} created`);
      ctx.navigate(`#/tools/${enc(tool.id)}`);
    });
    mount(page, pageHeader(`New tool for ${ctx.agent.name}`), form);
    return;
  }
  const tool = await get(`/tools/${enc(id)}`);
  const editor = toolEditor(tool, tool.agentId);
  const form = onSubmit(h("form.stack.card", { "aria-label": "Edit tool" }, editor.nodes, h("button", { type: "submit" }, "Save tool")), async (data) => {
    await put(`/tools/${enc(id)}`, toolBody(data, true, editor.parts));
    toast("Tool saved");
    ctx.navigate(`#/tools/${enc(id)}`);
  });
  const remove = deleteButton("Delete tool", `Delete tool "${tool.name}"?`, "Delete tool",
    `/tools/${enc(id)}`, "Tool deleted", () => ctx.navigate("#/tools"));
  const refresh = tool.executionType === "mcp" ? actionButton("Refresh from server", async () => {
    const fresh = await post(`/tools/${enc(id)}/refresh`);
    toast(`${fresh.mcpServerTools.length} tools from the server`);
    await renderTool(ctx, page, id);
  }, { class: "secondary" }) : null;
  const listed = tool.executionType === "mcp" ? ` · ${(tool.mcpServerTools || []).length} tools, listed ${when(tool.mcpListedAt)}` : "";
  mount(page,
    pageHeader(tool.name, `${toolType(tool.executionType)} · updated ${when(tool.updatedAt)}${listed}`, h("a.button.secondary", { href: "#/tools" }, "All tools"), refresh, remove),
    form,
    testRun(ctx, tool));
}


