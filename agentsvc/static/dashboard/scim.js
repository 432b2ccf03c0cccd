// SCIM provisioning: the Team page's section (owners): the base URL, a token shown once, revoke.

import { del, get, post } from "./api.js";
import { confirmDialog, copyText, h, toast, when } from "./dom.js";
import { actionButton } from "./forms.js";

/** "Provisioning (SCIM)": the base URL to paste, a new token (shown once), revoke. */
export async function scimSection(ctx) {
  const s = await get("/team/scim");
  const slot = h("p", { "aria-live": "polite" }, s.enabled && `Token made ${when(s.createdAt)}`);
  return [h("h2", {}, "Provisioning (SCIM)"), h("p", {}, "Base URL: ", h("code", {}, s.baseUrl)), slot,
    actionButton("Create token", async () => {
      const { token } = await post("/team/scim-token");
      slot.replaceChildren("Shown once: ", h("code", {}, token), " ",
        actionButton("Copy token", async () => toast((await copyText(token)) ? "Copied" : "Copy it by hand", "ok"), { class: "small" }));
    }),
    s.enabled && actionButton("Revoke token", async () => {
      if (!(await confirmDialog("Stop provisioning now?", "Revoke"))) return;
      await del("/team/scim-token");
      ctx.navigate("#/team");
    }, { class: "danger small" })];
}
