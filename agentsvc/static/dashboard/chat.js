// Chat preview: the page and its panel, which streams POST /chat, shows tool calls and renders
// form tools, whose submissions go to the public submit endpoint exactly as the widget sends them.

import { chatStream, describe, enc, post } from "./api.js";
import { append, button, field, h, mount, pretty } from "./dom.js";
import { pageHeader } from "./forms.js";
import { executionMode, modelName, plain } from "./labels.js";

function formControl(f) {
  const name = f.name;
  const required = Boolean(f.validation && f.validation.required && f.validation.required.value);
  const common = { name, required };
  switch (f.type) {
    case "textarea":
      return h("textarea", { ...common, rows: 3 });
    case "select":
      return h("select", common, h("option", { value: "" }, "Choose…"), (f.options || []).map((o) => h("option", { value: String(o.value) }, o.label)));
    case "multiselect":
      return h("select", { ...common, multiple: true }, (f.options || []).map((o) => h("option", { value: String(o.value) }, o.label)));
    case "datetime":
      return h("input", { ...common, type: "datetime-local" });
    case "image":
    case "file":
      return h("input", { ...common, type: "file", accept: f.type === "image" ? "image/*" : undefined });
    default:
      return h("input", { ...common, type: ["email", "tel", "number", "date"].includes(f.type) ? f.type : "text" });
  }
}

function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/** A form of a form tool's result: fill it in and submit it as an end user would. */
function renderForm(form, conversationId, onDone) {
  const schema = form.formSchema || { fields: [] };
  const el = h("form.stack.chat-form", { "aria-label": `Form ${form.toolName}` });
  const controls = {};
  for (const f of schema.fields || []) {
    controls[f.name] = formControl(f);
    el.append(field(f.label || f.name, controls[f.name]));
  }
  const status = h("p.muted", { role: "status" });
  el.append(h("button", { type: "submit" }, schema.submitLabel || "Submit"), status);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    const formData = {};
    const fieldsCompleted = [];
    for (const f of schema.fields || []) {
      const c = controls[f.name];
      let value;
      if (c.type === "file") value = c.files[0] ? await readFile(c.files[0]) : "";
      else if (c.multiple) value = [...c.selectedOptions].map((o) => o.value);
      else if (c.type === "number" && c.value !== "") value = Number(c.value);
      else value = c.value;
      const empty = value === "" || (Array.isArray(value) && !value.length);
      if (!empty) {
        formData[f.name] = value;
        fieldsCompleted.push(f.name);
      }
    }
    const body = { toolId: form.toolId, formData, fieldsCompleted };
    if (conversationId) body.conversationId = conversationId;
    status.textContent = "Sending…";
    try {
      const result = await post("/form-submissions/submit", body);
      mount(el, h("p.notice", schema.successMessage || "Thanks, submitted."),
        h("p.muted", `Submission ${result.submissionId} · ${executionMode(result.executionMode)}` +
          (result.webhookResult ? ` · webhook ${result.webhookResult.success ? "delivered" : "failed: " + (result.webhookResult.error || "")}` : "")));
      onDone(result);
    } catch (err) {
      status.textContent = describe(err);
      status.setAttribute("role", "alert");
    }
  });
  return el;
}

/**
 * A chat panel bound to one agent (its `version`, "draft" or a number, for the team's
 * preview; else the live one). Returns {el, send(text)}; `send` resolves when the
 * assistant's turn has ended.
 */
export function chatPanel(agentId, { title = "Chat preview", version } = {}) {
  const log = h("div.transcript", { role: "log", "aria-label": "Transcript", "aria-live": "polite" });
  const box = h("textarea", { id: "chat-message", rows: 2, placeholder: "Write as a visitor would" });
  const send = h("button", { type: "submit" }, "Send");
  let messages = [];
  let conversationId = null;
  const reset = button("New conversation", () => {
    messages = [];
    conversationId = null;
    mount(log);
    convLabel.textContent = "";
  });
  const convLabel = h("span.muted");
  const form = h("form.composer", h("label", { for: "chat-message", class: "sr-only" }, "Message"), box, send);

  function bubble(role, text) {
    const el = h("div", { class: `msg ${role}` }, h("span.who", role === "user" ? "You" : "Agent"), h("div.text", text));
    log.append(el);
    log.scrollTop = log.scrollHeight;
    return el.querySelector(".text");
  }

  /** Good/Bad answer buttons: the same feedback endpoint the widget uses. */
  function feedback(convId, msgId) {
    const row = h("div.feedback");
    const rate = async (rating, button) => {
      try {
        await post(`/conversations/${enc(convId)}/feedback`, { messageId: msgId, rating });
        for (const b of row.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b === button));
      } catch (err) {
        row.append(h("span.bad", describe(err)));
      }
    };
    const up = button("👍", () => rate("up", up), { class: "small secondary", "aria-label": "Good answer", "aria-pressed": "false" });
    const down = button("👎", () => rate("down", down), { class: "small secondary", "aria-label": "Bad answer", "aria-pressed": "false" });
    append(row, [up, down]);
    return row;
  }

  async function turn(text) {
    messages.push({ role: "user", content: text });
    bubble("user", text);
    const answer = bubble("assistant", "");
    answer.parentElement.setAttribute("aria-busy", "true");
    let reply = "";
    let messageId = null;
    const body = { agentId, messages, version };
    if (conversationId) body.conversationId = conversationId;
    try {
      await chatStream(body, (name, data) => {
        if (name === "message_start" && data.conversationId) {
          conversationId = data.conversationId;
          messageId = data.messageId || null;
          convLabel.textContent = "";
          convLabel.append("Saved: ", h("a", { href: `#/conversations/${enc(conversationId)}` }, "open it under Conversations"));
        } else if (name === "content_block_delta" && data.delta && typeof data.delta.text === "string") {
          reply += data.delta.text;
          answer.textContent = reply;
        } else if (name === "answer_replaced") {
          answer.textContent = reply = data.text; // a guardrail's fallback replaces what was shown
        } else if (name === "tool_use_start") {
          log.insertBefore(h("div.tool-note", `Calling tool ${data.toolName} with `, h("code", JSON.stringify(data.input))), answer.parentElement);
        } else if (name === "approval_pending" || name === "approval_decided") {
          const said = name === "approval_pending" ? "waits for a person's approval in the Inbox" : data.status;
          log.insertBefore(h("div.tool-note", `${data.toolName}: ${said}`), answer.parentElement);
        } else if (name === "tool_result") {
          const note = h("details", { class: `tool-note ${data.isError ? "error" : ""}` },
            h("summary", `Result of ${data.toolName}${data.isError ? " (error)" : ""}`),
            h("pre", typeof data.output === "string" ? data.output : pretty(data.output)));
          log.insertBefore(note, answer.parentElement);
          if (data.form) log.insertBefore(renderForm(data.form, conversationId, () => {}), answer.parentElement);
        } else if (name === "error") {
          answer.parentElement.classList.add("error");
          reply += (reply ? "\n" : "") + `Error: ${data.error ? plain(data.error.message) : "the turn failed"}`;
          answer.textContent = reply;
        }
        log.scrollTop = log.scrollHeight;
      });
    } catch (err) {
      answer.parentElement.classList.add("error");
      answer.textContent = describe(err);
    }
    answer.parentElement.removeAttribute("aria-busy");
    if (!reply) answer.parentElement.classList.add("empty-reply");
    if (messageId && conversationId) answer.parentElement.append(feedback(conversationId, messageId));
    messages.push({ role: "assistant", content: reply });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = box.value.trim();
    if (!text) return;
    box.value = "";
    send.disabled = true;
    try {
      await turn(text);
    } finally {
      send.disabled = false;
      // Back to the message box, unless the person is already typing elsewhere (in a form
      // the turn showed): taking the focus then would send their keys to the wrong field.
      const at = document.activeElement;
      if (!at || at === document.body || form.contains(at)) box.focus();
    }
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  const el = h("section.chat.card", { "aria-label": title },
    h("div.row", h("h2", title), h("span.spacer"), convLabel, reset),
    log, form);
  return { el, send: turn };
}

// The page: talk to the selected agent exactly as the widget would, through POST /chat.

/** A live chat with the selected agent (conversations show up under Conversations). */
export async function renderPreview(ctx, page) {
  const agent = ctx.agent;
  const panel = chatPanel(agent.id, { title: `Chat with ${agent.name}` });
  mount(page,
    pageHeader("Chat preview", `Talk to ${agent.name} as a visitor would (model: ${modelName(agent.model)}); these conversations are kept under Conversations. To try one tool on its own, use Test run on its page under Tools.`),
    panel.el);
}
