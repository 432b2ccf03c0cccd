// Words for people: the label of every status and code the API answers with, in one place,
// so each page says "Delivered", never webhook_success. A code without a label (a newer
// server's) still reads as words: "member.renamed" shows as "Member renamed".

/** A code as words: "member.renamed" → "Member renamed", "retentionDays" → "Retention days". */
export function words(code) {
  const text = String(code ?? "").replace(/([a-z\d])([A-Z])/g, "$1 $2").replace(/[._\s-]+/g, " ").trim().toLowerCase();
  return text ? text[0].toUpperCase() + text.slice(1) : "";
}

/** A function that labels the codes of one map (words for any other code). */
const labeller = (map) => (code) => (Object.hasOwn(map, code) ? map[code] : words(code));

/** A map's [code, label] pairs for a select, optionally after a first [value, label]. */
export const choices = (map, first) => (first ? [first] : []).concat(Object.entries(map));

export const CONVERSATION_STATUS = { bot: "With the agent", waiting: "Waiting for a person", human: "With a person", closed: "Closed" };
export const SUBMISSION_STATUS = {
  pending: "Waiting to be delivered", submitted: "Submitted", webhook_success: "Delivered", webhook_failed: "Delivery failed",
  client_success: "Handled by the page", client_failed: "Failed on the page", success: "Delivered and handled", failed: "Failed",
};
export const DELIVERY_STATUS = { pending: "Waiting", success: "Delivered", failed: "Failed" };
export const DOCUMENT_STATUS = { indexing: "Indexing…", ready: "Ready", failed: "Failed" };
export const DOCUMENT_FORMAT = { text: "Plain text", markdown: "Markdown", html: "HTML", pdf: "PDF" };
export const MESSAGE_STATUS = { complete: "Complete", interrupted: "Interrupted", failed: "Failed" };
export const INVITATION_STATUS = { pending: "Pending", accepted: "Accepted", expired: "Expired", cancelled: "Cancelled" };
export const ROLE = { owner: "Owner", member: "Member" };
export const TRIGGER_TYPE = { time_on_page: "Time on page", scroll_depth: "Scroll depth", exit_intent: "Exit intent", page_view: "Page view", custom_event: "Custom event" };
export const TRIGGER_ACTION = { open_chat: "Open the chat", show_form: "Show a form", show_bubble: "Show a bubble" };
export const EXECUTION_MODE = { webhook: "Sent to a webhook", client: "Handled by the page", both: "Sent to a webhook and handled by the page" };
export const POST_ACTION = { webhook: "Webhook", team_chat: "Team chat", email: "E-mail" };
export const TOOL_TYPE = { mock: "Fixed response", http: "HTTP call", form: "Form", mcp: "MCP server", function: "Function" };
export const DISPLAY_TYPE = {
  text: "Text", product_card: "Product card", product_carousel: "Product carousel", image: "Image",
  table: "Table", buttons: "Buttons", form: "Form", custom: "Raw data",
};
export const ACTOR_VIA = { session: "Dashboard", apiKey: "API key", system: "The server" };
export const WEBHOOK_EVENT = {
  "conversation.created": "Conversation started", "message.created": "Message stored", "feedback.created": "Answer rated",
  "form.submitted": "Form submitted", "conversation.handoff": "Person asked for", "conversation.assigned": "Conversation taken",
  "conversation.released": "Handed back to the agent", "conversation.closed": "Conversation closed", "conversation.reopened": "Conversation reopened",
  "budget.warning": "Budget warning",
};
export const AUDIT_ACTION = {
  "api_key.created": "API key created", "api_key.revoked": "API key revoked",
  "member.invited": "Member invited", "invitation.cancelled": "Invitation cancelled", "member.joined": "Member joined",
  "member.removed": "Member removed", "member.renamed": "Member renamed",
  "agent.created": "Agent created", "agent.deleted": "Agent deleted", "agent.retention_changed": "Data retention changed",
  "agent.version_restored": "Agent version restored",
  "agent.budget_changed": "Agent budget changed", "team.budget_changed": "Team budget changed",
  "tool.created": "Tool created", "tool.deleted": "Tool deleted",
  "webhook.created": "Webhook created", "webhook.deleted": "Webhook deleted",
  "end_user.exported": "Visitor's data exported", "end_user.erased": "Visitor's data erased",
  "conversations.exported": "Conversations exported", "form_submissions.exported": "Form submissions exported",
};

export const conversationStatus = labeller(CONVERSATION_STATUS);
export const submissionStatus = labeller(SUBMISSION_STATUS);
export const deliveryStatus = labeller(DELIVERY_STATUS);
export const documentStatus = labeller(DOCUMENT_STATUS);
export const documentFormat = labeller(DOCUMENT_FORMAT);
export const messageStatus = labeller(MESSAGE_STATUS);
export const invitationStatus = labeller(INVITATION_STATUS);
export const role = labeller(ROLE);
export const triggerType = labeller(TRIGGER_TYPE);
export const triggerAction = labeller(TRIGGER_ACTION);
export const executionMode = labeller(EXECUTION_MODE);
export const postAction = labeller(POST_ACTION);
export const toolType = labeller(TOOL_TYPE);
export const actorVia = labeller(ACTOR_VIA);
export const webhookEvent = labeller(WEBHOOK_EVENT);
export const auditAction = labeller(AUDIT_ACTION);

/** A model id as people read it: "Builtin", or the provider's own name ("openai/gpt-4o"). */
export const modelName = (id) => (id === "builtin" ? "Builtin" : String(id ?? ""));

/** A language of the agent (Snowball's name) as people write it: "english" → "English". */
export const languageName = words;

/** A language tag by name: "de-DE" → "German (Germany)". */
export function localeName(tag) {
  try {
    return new Intl.DisplayNames(undefined, { type: "language" }).of(tag);
  } catch {
    return String(tag);
  }
}

/** Text for people: `code` quoted as “code” (messages from the API may carry backticks). */
export function plain(text) {
  return String(text ?? "").replace(/`([^`]*)`/g, "“$1”").replace(/`/g, "'");
}

/** Every code that has a label, for checks that none is shown raw (tests read this). */
export const ALL_CODES = [
  CONVERSATION_STATUS, SUBMISSION_STATUS, DELIVERY_STATUS, DOCUMENT_STATUS, MESSAGE_STATUS, INVITATION_STATUS,
  TRIGGER_TYPE, TRIGGER_ACTION, EXECUTION_MODE, POST_ACTION, DISPLAY_TYPE, WEBHOOK_EVENT, AUDIT_ACTION,
].flatMap(Object.keys);
