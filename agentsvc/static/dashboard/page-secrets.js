// Secrets: names and dates only (values never come back), set or replace, delete.

import { del, get, put } from "./api.js";
import { confirmDialog, field, h, mount, table, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";

/** The team's secrets, used by HTTP tools as {{NAME}}. */
export async function renderSecrets(ctx, page) {
  const secrets = await get("/secrets");
  const form = onSubmit(h("form", { class: "row card", "aria-label": "Set a secret" },
    field("Name", h("input", { name: "name", required: true, placeholder: "API_KEY", autocomplete: "off" })),
    field("Value", h("input", { name: "value", type: "password", required: true, autocomplete: "new-password" })),
    h("button", { type: "submit" }, "Save secret")), async (data) => {
    const name = String(data.get("name")).trim();
    if (!name) throw new Error("name: required");
    await put(`/secrets/${encodeURIComponent(name)}`, { value: String(data.get("value")) });
    toast(`Secret ${name} saved`);
    ctx.navigate("#/secrets");
  });
  mount(page,
    pageHeader("Secrets", "Encrypted at rest and never shown again. HTTP tools use them as {{NAME}} in their URL and headers."),
    form,
    table([
      { label: "Name", cell: (s) => h("code", {}, s.name) },
      { label: "Created", cell: (s) => when(s.createdAt) },
      { label: "Updated", cell: (s) => when(s.updatedAt) },
      { label: "", cell: (s) => actionButton("Delete", async () => {
        if (!(await confirmDialog(`Delete secret ${s.name}? Tools using it will fail.`, "Delete secret"))) return;
        await del(`/secrets/${encodeURIComponent(s.name)}`);
        toast(`Secret ${s.name} deleted`);
        ctx.navigate("#/secrets");
      }, { class: "danger small", "aria-label": `Delete ${s.name}` }) },
    ], secrets, "No secrets yet."));
}
