// The team's credentials, one page each. API keys: create (the key is shown once), list
// masked, revoke. Secrets: names and dates only (values never come back), set or replace, delete.

import { enc, get, post, put } from "./api.js";
import { button, copyText, field, h, mount, table, toast, when } from "./dom.js";
import { deleteButton, onSubmit, pageHeader } from "./forms.js";

/** The caller's keys (the owner sees the team's). */
export async function renderApiKeys(ctx, page) {
  const keys = await get("/api-keys");
  const reveal = h("div.reveal-slot");
  const form = onSubmit(h("form.row.card", { "aria-label": "Create an API key" },
    field("Key name", h("input", { name: "name", maxlength: 200, placeholder: "CI deploy" })),
    h("button", { type: "submit" }, "Create API key")), async (data) => {
    const created = await post("/api-keys", { name: String(data.get("name")).trim() });
    const value = h("code.secret-value", { id: "new-api-key" }, created.key);
    mount(reveal, h("div.card.reveal", { role: "status" },
      h("p", h("strong", "Copy this key now: it is shown only once.")),
      value,
      h("div.row",
        button("Copy key", async () => toast((await copyText(created.key)) ? "Key copied" : "Copy it by hand", "ok"), { class: "small" }),
        button("Done", () => ctx.navigate("#/api-keys")))));
    form.reset();
    await refreshList();
  });
  const listSlot = h("div");
  const members = new Map((ctx.team.members || []).map((m) => [m.id, m.email]));
  async function refreshList(rows) {
    const current = rows || (await get("/api-keys"));
    mount(listSlot, table([
      { label: "Name", cell: (k) => k.name || "—" },
      { label: "Key", cell: (k) => h("code", `${k.prefix}…${k.last4}`) },
      { label: "User", cell: (k) => members.get(k.userId) || k.userId },
      { label: "Created", cell: (k) => when(k.createdAt) },
      { label: "", cell: (k) => deleteButton("Revoke", `Revoke key ${k.name || k.prefix}? Anything using it stops working at once.`, "Revoke key",
        `/api-keys/${enc(k.id)}`, "Key revoked", refreshList, { class: "danger small", "aria-label": `Revoke ${k.name || k.prefix}` }) },
    ], current, "No API keys yet."));
  }
  await refreshList(keys);
  mount(page,
    pageHeader("API keys", "Keys act for you in this team: send them as Authorization: Bearer KEY. Keep them out of web pages."),
    form, reveal, listSlot);
}

/** The team's secrets, used by HTTP tools as {{NAME}}. */
export async function renderSecrets(ctx, page) {
  const secrets = await get("/secrets");
  const form = onSubmit(h("form.row.card", { "aria-label": "Set a secret" },
    field("Name", h("input", { name: "name", required: true, placeholder: "API_KEY", autocomplete: "off" })),
    field("Value", h("input", { name: "value", type: "password", required: true, autocomplete: "new-password" })),
    h("button", { type: "submit" }, "Save secret")), async (data) => {
    const name = String(data.get("name")).trim();
    if (!name) throw new Error("name: required");
    await put(`/secrets/${enc(name)}`, { value: String(data.get("value")) });
    toast(`Secret ${name} saved`);
    ctx.navigate("#/secrets");
  });
  mount(page,
    pageHeader("Secrets", "Encrypted at rest and never shown again. HTTP tools use them as {{NAME}} in their URL and headers."),
    form,
    table([
      { label: "Name", cell: (s) => h("code", s.name) },
      { label: "Created", cell: (s) => when(s.createdAt) },
      { label: "Updated", cell: (s) => when(s.updatedAt) },
      { label: "", cell: (s) => deleteButton("Delete", `Delete secret ${s.name}? Tools using it will fail.`, "Delete secret",
        `/secrets/${enc(s.name)}`, `Secret ${s.name} deleted`, () => ctx.navigate("#/secrets"), { class: "danger small", "aria-label": `Delete ${s.name}` }) },
    ], secrets, "No secrets yet."));
}
