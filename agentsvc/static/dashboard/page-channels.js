// The Channels page: the agent on other platforms. Each channel with its address, when it last
// received a message and sent a reply, its last problem in words, and (for owners) a test of
// its connection, edit and delete; adding one walks through its platform's setup step by step.

import { get, patch, post } from "./api.js";
import { button, copyText, field, h, mount, toast } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";

// Each platform's setup as data: its steps, and its settings (the config's names) under the
// step numbered `at`; `secret`: write-only (left empty on edit, kept); `optional`. Another
// platform: its entry here, in the order offered.
const PLATFORMS = {
  telegram: {
    label: "Telegram",
    steps: [
      "In Telegram, open @BotFather, send /newbot and copy the token it gives you.",
      "Paste the token here.",
      "Press Add channel: we set the bot's webhook for you.",
      "Send your bot a message: the agent answers.",
    ],
    fields: [
      { name: "botToken", label: "Bot token", secret: true, at: 1 },
      { name: "apiBaseUrl", label: "Bot API address (only for a proxy)", optional: true, at: 1 },
    ],
  },
  whatsapp: {
    label: "WhatsApp",
    steps: [
      "In Meta's App Dashboard, add WhatsApp to your app; copy the phone number ID and a system user's permanent access token.",
      "Copy the app secret (App settings, Basic) and make up a verify token.",
      "Press Add channel. Then in WhatsApp's Configuration, set the callback URL to the channel's address with the same verify token, and subscribe to messages.",
    ],
    fields: [
      { name: "phoneNumberId", label: "Phone number ID", at: 0 },
      { name: "accessToken", label: "Access token", secret: true, at: 0 },
      { name: "appSecret", label: "App secret", secret: true, at: 1 },
      { name: "verifyToken", label: "Verify token", secret: true, at: 1 },
    ],
  },
  slack: {
    label: "Slack",
    steps: [
      "At api.slack.com/apps, create an app; give its bot the scopes app_mentions:read, chat:write and im:history; install it and copy the bot token (xoxb-…).",
      "Copy the signing secret (Basic Information).",
      "Press Add channel. Then under Event Subscriptions, set the request URL to the channel's address and subscribe to app_mention and message.im.",
    ],
    fields: [
      { name: "botToken", label: "Bot token", secret: true, at: 0 },
      { name: "signingSecret", label: "Signing secret", secret: true, at: 1 },
    ],
  },
  email: {
    label: "E-mail",
    steps: [
      "Give the address people write to (a mailbox of its own).",
      "Give its IMAP server and sign-in, from your e-mail provider (often an app password).",
      "Press Add channel: we sign in first, then read new messages every minute and answer them by e-mail.",
    ],
    fields: [
      { name: "address", label: "E-mail address", type: "email", at: 0 },
      { name: "imapHost", label: "IMAP server", at: 1 },
      { name: "imapUser", label: "IMAP user name", at: 1 },
      { name: "imapPassword", label: "IMAP password", secret: true, at: 1 },
    ],
  },
  api: {
    label: "Your own app (API)",
    steps: [
      "Give the address that receives the agent's replies.",
      "Press Add channel and copy the signing secret: your app signs its messages with it.",
      "Your app sends messages to the channel's address.",
    ],
    fields: [{ name: "outboundUrl", label: "Outbound URL", type: "url", at: 0 }],
  },
};

// A type this page does not know (a newer server's) is listed under its name.
const platform = (type) => PLATFORMS[type] || { label: type, steps: [], fields: [] };
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const UNITS = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];

/** "5 minutes ago" in the browser's language (the date and time on hover), else `none`. */
function ago(iso, none) {
  if (!iso) return none;
  const date = new Date(iso);
  const seconds = (date - Date.now()) / 1000;
  const [unit, size] = UNITS.find(([, s]) => -seconds >= s) || UNITS[3];
  return h("time", { datetime: iso }, relative.format(Math.round(seconds / size), unit));
}

/** A setting's input; on edit a credential's is empty (left so, it is kept). */
function setting(spec, channel) {
  const kept = channel && channel.config[spec.name];
  return field(spec.label, h("input", {
    name: spec.name, type: spec.secret ? "password" : spec.type,
    required: !spec.optional && !(channel && spec.secret), value: spec.secret ? "" : kept || "",
  }), channel && spec.secret ? `Now ${kept}: leave empty to keep it.` : null);
}

/** The settings a form holds (on edit: null when unchanged; credentials left empty are kept,
 * and so are the settings the form does not show, but not those the server keeps itself). */
function settingsOf(data, type, channel) {
  const config = {};
  for (const [name, value] of Object.entries(channel ? channel.config : {})) {
    if (!/^bot(User)?Id$/.test(name) && !String(value).startsWith("••••")) config[name] = value;
  }
  let changed = !channel;
  for (const spec of platform(type).fields) {
    const value = String(data.get(spec.name) || "").trim();
    delete config[spec.name];
    if (value) config[spec.name] = value;
    if (channel && value !== (spec.secret ? "" : channel.config[spec.name] || "")) changed = true;
  }
  return changed && config;
}

/** The add form: choose a platform, follow its steps; an api channel's secret shown once. */
function addSection(agent, after) {
  const steps = h("div", { class: "stack" });
  const reveal = h("div");
  const form = h("form", { class: "stack card", "aria-label": "Add a channel" }, h("h2", {}, "Add a channel"),
    h("fieldset", { class: "stack" }, h("legend", {}, "Where should the agent answer?"),
      Object.keys(PLATFORMS).map((type) => field(platform(type).label,
        h("input", { type: "radio", name: "type", value: type, onchange: () => mount(steps,
          h("ol", {}, platform(type).steps.map((text, i) => h("li", {}, text, platform(type).fields.filter((f) => f.at === i).map((f) => setting(f))))),
          h("button", { type: "submit" }, "Add channel")) })))),
    steps);
  onSubmit(form, async (data) => {
    const type = String(data.get("type"));
    const made = await post(`/agents/${encodeURIComponent(agent.id)}/channels`, { type, name: platform(type).label, config: settingsOf(data, type) });
    form.reset();
    mount(steps);
    mount(reveal, h("div", { class: "card reveal", role: "status" }, made.secret
      ? [h("p", {}, h("strong", {}, "Copy this signing secret now: it is shown only once.")),
          h("code", { class: "secret-value", id: "channel-secret" }, made.secret),
          button("Copy secret", async () => toast((await copyText(made.secret)) ? "Copied" : "Copy it by hand"))]
      : `${made.name} is ready.`));
    await after();
  });
  return [reveal, form];
}

/** The edit form of a channel: name, on or off, new settings. */
function editForm(channel, after) {
  const form = h("form", { class: "stack", "aria-label": `Edit ${channel.name}` },
    field("Name", h("input", { name: "name", value: channel.name, required: true })),
    field("On: the agent answers on this channel", h("input", { type: "checkbox", name: "enabled", checked: channel.enabled })),
    platform(channel.type).fields.map((f) => setting(f, channel)),
    h("button", { type: "submit" }, "Save channel"));
  return onSubmit(form, async (data) => {
    const body = { name: String(data.get("name")).trim(), enabled: data.get("enabled") === "on" };
    const config = settingsOf(data, channel.type, channel);
    if (config) body.config = config;
    await patch(`/channels/${encodeURIComponent(channel.id)}`, body);
    toast("Channel saved");
    await after();
  });
}

/** One channel's card: its address, its status, and the owner's buttons. */
function channelCard(ctx, channel, after) {
  const { lastInboundAt, lastOutboundAt, lastError } = channel.status;
  const path = `/channels/${encodeURIComponent(channel.id)}`;
  const result = h("p", { role: "status" });
  const card = h("section", { class: "card", "aria-label": channel.name },
    h("div", { class: "row" }, h("h2", {}, channel.name), h("span", { class: `tag ${channel.enabled ? "good" : "warn"}` }, channel.enabled ? "On" : "Off")),
    h("p", { class: "muted" }, "The address the platform sends messages to:"),
    h("div", { class: "row" }, h("code", { class: "secret-value" }, channel.inboundUrl),
      button("Copy", async () => toast((await copyText(channel.inboundUrl)) ? "Copied" : "Copy it by hand"), { "aria-label": `Copy the address of ${channel.name}` })),
    h("ul", {},
      h("li", {}, "Last message received: ", ago(lastInboundAt, "none yet")),
      h("li", {}, "Last reply sent: ", ago(lastOutboundAt, "none yet")),
      lastError ? h("li", {}, "Last problem, ", ago(lastError.at), `: ${lastError.message}`) : null));
  if (ctx.isOwner) {
    card.append(h("div", { class: "row" },
      actionButton("Test connection", async () => {
        result.textContent = "Testing…";
        const found = await post(`${path}/test`);
        result.textContent = found.message;
        result.className = found.ok ? "good" : "bad";
      }, { class: "secondary small" }),
      button("Edit", () => card.querySelector("form") || card.append(editForm(channel, after))),
      deleteButton("Delete", `Delete ${channel.name}? Its conversations stay.`, "Delete channel", path, "Channel deleted", after, { class: "danger small" })), result);
  }
  return card;
}

/** The agent's channels, and (for owners) adding one. */
export async function renderChannels(ctx, page) {
  const agent = ctx.agent;
  const list = h("div");
  const refresh = async () => {
    const channels = await get(`/agents/${encodeURIComponent(agent.id)}/channels`);
    mount(list, channels.length ? channels.map((c) => channelCard(ctx, c, refresh)) : h("p", { class: "empty" }, "No channels yet."));
  };
  await refresh();
  mount(page,
    pageHeader(`Channels of ${agent.name}`, "The agent answers on other platforms too; their conversations arrive in the inbox."),
    list,
    ctx.isOwner ? addSection(agent, refresh) : h("p", { class: "muted" }, "Only the team owner changes channels."));
}
