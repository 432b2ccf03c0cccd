// Chat preview: talk to the selected agent exactly as the widget would, through POST /chat.

import { h, mount } from "./dom.js";
import { chatPanel } from "./chat.js";
import { pageHeader } from "./forms.js";
import { modelName } from "./labels.js";

/** A live chat with the selected agent (conversations show up under Conversations). */
export async function renderPreview(ctx, page) {
  const agent = ctx.agent;
  const panel = chatPanel(agent.id, { title: `Chat with ${agent.name}` });
  mount(page,
    pageHeader("Chat preview", `Model: ${modelName(agent.model)}. Type /tool NAME {json} to run a tool with the builtin model.`),
    panel.el);
}
