// API keys: create (the key is shown once), list masked, revoke.

import { del, get, post } from "./api.js";
import { confirmDialog, copyText, field, h, mount, table, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";

/** The caller's keys (the owner sees the team's). */
export async function renderApiKeys(ctx, page) {
  const keys = await get("/api-keys");
  const reveal = h("div", { class: "reveal-slot" });
  const form = onSubmit(h("form", { class: "row card", "aria-label": "Create an API key" },
    field("Key name", h("input", { name: "name", maxlength: 200, placeholder: "CI deploy" })),
    h("button", { type: "submit" }, "Create API key")), async (data) => {
    const created = await post("/api-keys", { name: String(data.get("name")).trim() });
    const value = h("code", { class: "secret-value", id: "new-api-key" }, created.key);
    mount(reveal, h("div", { class: "card reveal", role: "status" },
      h("p", {}, h("strong", {}, "Copy this key now: it is shown only once.")),
      value,
      h("div", { class: "row" },
        h("button", { type: "button", class: "small", onclick: async () => toast((await copyText(created.key)) ? "Key copied" : "Copy it by hand", "ok") }, "Copy key"),
        h("button", { type: "button", class: "secondary small", onclick: () => ctx.navigate("#/api-keys") }, "Done"))));
    form.reset();
    await refreshList();
  });
  const listSlot = h("div");
  const members = new Map((ctx.team.members || []).map((m) => [m.id, m.email]));
  async function refreshList(rows) {
    const current = rows || (await get("/api-keys"));
    mount(listSlot, table([
      { label: "Name", cell: (k) => k.name || "—" },
      { label: "Key", cell: (k) => h("code", {}, `${k.prefix}…${k.last4}`) },
      { label: "User", cell: (k) => members.get(k.userId) || k.userId },
      { label: "Created", cell: (k) => when(k.createdAt) },
      { label: "", cell: (k) => actionButton("Revoke", async () => {
        if (!(await confirmDialog(`Revoke key ${k.name || k.prefix}? Anything using it stops working at once.`, "Revoke key"))) return;
        await del(`/api-keys/${encodeURIComponent(k.id)}`);
        toast("Key revoked");
        await refreshList();
      }, { class: "danger small", "aria-label": `Revoke ${k.name || k.prefix}` }) },
    ], current, "No API keys yet."));
  }
  await refreshList(keys);
  mount(page,
    pageHeader("API keys", "Keys act for you in this team: send them as Authorization: Bearer KEY. Keep them out of web pages."),
    form, reveal, listSlot);
}
