// Team: members (remove), invitations (invite, cancel, copy the link when no mail leaves
// the server), the team's name, single sign-on (with the sign-in page's offer of it) and
// provisioning (SCIM), which are the owner's; canned responses, everyone's. And your
// profile in the team, and the team's credentials (API keys, secrets), a page each (below).

import { del, enc, get, patch, post, put } from "./api.js";
import { avatar, button, confirmDialog, copyText, field, h, mount, select, table, toast, when } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";
import { ROLE, choices, invitationStatus, role } from "./labels.js";
import { me } from "./page-inbox.js";

/** Members for everyone; invite, cancel and remove for the owner only. */
export async function renderTeam(ctx, page) {
  const context = await get("/team/context");
  ctx.team = context;
  const owner = context.isOwner;
  const members = context.members;
  const [invitations, mail] = owner
    ? await Promise.all([get("/team/invitations"), get("/auth/providers").catch(() => ({}))])
    : [[], {}];
  // Without SMTP the invitation e-mail only reaches the server's log: the owner shares the link.
  const noMail = mail.mailDelivery === "log";
  const memberColumns = [
    ["Name", (m) => m.name || "—"],
    ["E-mail", (m) => m.email],
    ["Role", (m) => h("span", { class: `tag ${m.role}` }, role(m.role))],
    ["Joined", (m) => when(m.createdAt)],
  ];
  if (owner) {
    memberColumns.push([
      "",
      (m) => (m.role === "owner" ? "" : actionButton("Remove", async () => {
        if (!(await confirmDialog(`Remove ${m.email} from the team? Their sessions and API keys lose access at once.`, "Remove member"))) return;
        await del(`/team/members/${enc(m.memberId)}`);
        toast(`${m.email} removed`);
        ctx.navigate("#/team");
      }, { class: "danger small", "aria-label": `Remove ${m.email}` })),
    ]);
  }
  const sections = [
    pageHeader("Team", owner ? "You own this team: invite and remove members here." : `Owner: ${context.owner.name || context.owner.email}. Only the owner manages membership.`),
    h("h2", "Members"),
    table(memberColumns, members, "No members.", "Members"),
  ];
  if (owner) {
    sections.splice(1, 0, onSubmit(h("form.row.card", { "aria-label": "Rename the team" },
      field("Team name", h("input", { name: "name", required: true, maxlength: 80, value: ctx.session.team.name })),
      h("button", { type: "submit" }, "Rename team")), async (data) => {
      const team = await patch("/team", { name: String(data.get("name")).trim() });
      toast(`The team is now called ${team.name}`);
      ctx.restart();
    }));
    const form = onSubmit(h("form.row.card.invite", { "aria-label": "Invite a member" },
      field("E-mail", h("input", { name: "email", type: "email", required: true, placeholder: "colleague@example.com" })),
      field("Role", select(choices(ROLE).reverse(), "member", { name: "role" })),
      h("button", { type: "submit" }, "Send invitation")), async (data) => {
      const inv = await post("/team/invite", { email: String(data.get("email")).trim(), role: data.get("role") });
      toast(noMail ? `Invitation made for ${inv.email}: copy its link below and send it yourself` : `Invitation sent to ${inv.email}`);
      ctx.navigate("#/team");
    });
    const invColumns = [
      ["E-mail", (i) => i.email],
      ["Role", (i) => role(i.role)],
      ["Status", (i) => h("span", { class: `tag ${i.status === "pending" ? "warn" : ""}` }, invitationStatus(i.status))],
      ["Expires", (i) => when(i.expiresAt)],
      [
        "",
        (i) => (i.status !== "pending" ? "" : h("div.actions",
          noMail && i.link ? actionButton("Copy link", async () => {
            if (!(await copyText(i.link))) throw new Error("The link could not be copied: select it in the server's log instead");
            toast(`Link copied: send it to ${i.email} yourself`);
          }, { class: "small", "aria-label": `Copy link for ${i.email}` }) : null,
          actionButton("Cancel", async () => {
            await del(`/team/invitations/${enc(i.id)}`);
            toast(`Invitation to ${i.email} cancelled`);
            ctx.navigate("#/team");
          }, { class: "secondary small", "aria-label": `Cancel invitation to ${i.email}` }))),
      ],
    ];
    sections.push(h("h2", "Invite"), form,
      noMail
        ? h("p.notice", { role: "status" }, "Mail is not set up on this server, so invitations are not e-mailed. Use “Copy link” and send the link yourself (chat, your own e-mail). It works once, for the address invited, for 7 days.")
        : h("p.muted", "The invitation link is e-mailed. It works once and lasts 7 days."),
      h("h2", "Invitations"), table(invColumns, invitations, "No invitations yet.", "Invitations"),
      await ssoSection(ctx),
      await scimSection(ctx));
  }
  mount(page, sections, await cannedSection(ctx));
}

function cannedForm(ctx, c) {
  const input = (name, attrs) => h("input", { name, required: true, value: c ? c[name] : "", ...attrs });
  return onSubmit(h("form.stack", { "aria-label": c ? `Edit /${c.shortcut}` : "Add a canned response" },
    h("div.row",
      field("Shortcut", input("shortcut", { maxlength: 32, pattern: "[a-z0-9_\\-]+" }), "Lower-case letters, digits, - and _"),
      field("Title", input("title", { maxlength: 80 }))),
    field("Text", h("textarea", { name: "content", required: true, maxlength: 5000, rows: "3", value: c ? c.content : "" })),
    h("button", { type: "submit" }, c ? "Save response" : "Add response")), async (data) => {
    const body = Object.fromEntries(["shortcut", "title", "content"].map((k) => [k, String(data.get(k)).trim()]));
    if (c) await patch(`/team/canned-responses/${enc(c.id)}`, body);
    else await post("/team/canned-responses", body);
    toast(`/${body.shortcut} saved`);
    ctx.navigate("#/team");
  });
}

/** The team's canned responses (any member): the list, each opening to edit, and a new one. */
async function cannedSection(ctx) {
  const rows = await get("/team/canned-responses");
  return [
    h("h2", "Canned responses"),
    h("p.muted", "Ready answers: type / and the shortcut in a reply. Every member can use and change them."),
    rows.length ? h("ul.plain.canned-responses", rows.map((c) => h("li", h("details.card",
      h("summary", h("strong", `/${c.shortcut}`), ` ${c.title}`),
      cannedForm(ctx, c),
      actionButton("Delete", async () => {
        if (!(await confirmDialog(`Delete the canned response /${c.shortcut}?`, "Delete"))) return;
        await del(`/team/canned-responses/${enc(c.id)}`);
        toast(`/${c.shortcut} deleted`);
        ctx.navigate("#/team");
      }, { class: "danger small", "aria-label": `Delete /${c.shortcut}` }))))) : h("p.empty", "No canned responses yet."),
    h("div.card", h("h3", "Add a canned response"), cannedForm(ctx, null)),
  ];
}

// ── Single sign-on: the Team page's section (owners) and the sign-in page's "Continue with
// SSO" (page-auth.js).

const words = (v) => String(v || "").split(/[\s,]+/).filter(Boolean);

/** The owner's "Single sign-on" section: OpenID Connect or SAML settings and what to paste. */
export async function ssoSection(ctx) {
  const s = await get("/team/sso").catch(() => null);
  // What the provider needs before it can make its metadata: known before anything is saved.
  const sp = `${ctx.team.publicUrl}/api/v1/auth/saml/${ctx.session.team.id}/`;
  const box = h("div");
  const draw = (kind) => {
    const saml = kind === "saml", v = s && s.type === kind ? s : null;
    const input = (name, label, attrs, hint) => field(label, h("input", { name, value: v ? v[name] : "", ...attrs }), hint);
    const copy = (label, text) => actionButton("Copy", async () => toast((await copyText(text)) ? `${label} copied` : "Select it to copy it", "ok"), { class: "small secondary", "aria-label": `Copy the ${label}` });
    const paste = (label, uri) => h("p", `${label} to paste into your provider: `, h("code", uri), " ", copy(label, uri));
    // Each domain's proof: a domain does nothing until its TXT record is found.
    const proof = h("ul", { "aria-label": "Domain verification" });
    const prove = (list) => proof.replaceChildren(...list.map((d) => h("li", d.verified ? `${d.domain}: Verified` : [`${d.domain}: not verified. Add a TXT record at `,
      h("code", d.recordName), " holding ", h("code", d.recordValue), " ", copy(`TXT value for ${d.domain}`, d.recordValue), d.message ? h("p.muted", d.message) : ""])));
    if (v) prove(v.domainVerification);
    const form = onSubmit(h("form.stack.card", { "aria-label": "Single sign-on" },
      field("Protocol", select([["oidc", "OpenID Connect"], ["saml", "SAML 2.0"]], kind, { onchange: (e) => draw(e.target.value) })),
      saml ? [paste("Entity ID", sp + "metadata"), paste("ACS URL", sp + "acs"), paste("Metadata URL", sp + "metadata"),
        field("Identity provider metadata (XML)", h("textarea", { name: "idpMetadataXml", rows: "4", required: true, value: v ? v.idpMetadataXml : "" })),
        ["email", "name", "groups"].map((a) => input(`${a}Attribute`, `${a[0].toUpperCase() + a.slice(1)} attribute`, { placeholder: a }))]
        : [paste("Redirect URI", v ? v.redirectUri : `${ctx.team.publicUrl}/api/v1/auth/sso/callback`),
          input("issuer", "Issuer", { type: "url", required: true, placeholder: "https://login.example.com" }),
          input("clientId", "Client ID", { required: true }),
          input("clientSecret", "Client secret", { type: "password", autocomplete: "off", value: "", required: !v }, v ? `Saved (${v.clientSecret}); leave empty to keep it.` : null)],
      input("domains", "E-mail domains", { required: true, value: v ? v.domains.join(", ") : "" }, "People at these domains sign in through your provider, e.g. example.com"), proof,
      v && v.domainVerification.some((d) => !d.verified) ? actionButton("Check DNS now", async () => prove(await post("/team/sso/domains/verify")), { class: "small" }) : null,
      field("Role mapping", h("textarea", { name: "roles", rows: "2", placeholder: "support-admins = admin", value: v ? Object.entries(v.roleMapping).map((e) => e.join(" = ")).join("\n") : "" }),
        "One group a line: “group = admin” (an owner) or “group = member”. Empty: roles are set here, not by groups."),
      field("Require single sign-on for these domains (no password or e-mailed link)", h("input", { type: "checkbox", name: "enforce", checked: v && v.enforce })),
      h("button", { type: "submit" }, "Save single sign-on")), async (data) => {
      const body = { type: kind, domains: words(data.get("domains")), enforce: data.get("enforce") === "on",
        roleMapping: Object.fromEntries(String(data.get("roles")).split("\n").filter((l) => l.trim()).map((l) => l.split("=").map((p) => p.trim()))) };
      for (const k of saml ? ["idpMetadataXml", "emailAttribute", "nameAttribute", "groupsAttribute"] : ["issuer", "clientId", "clientSecret"]) if (data.get(k).trim()) body[k] = data.get(k).trim();
      await put("/team/sso", body);
      toast("Single sign-on saved");
      ctx.navigate("#/team");
    });
    box.replaceChildren(form);
  };
  draw(s ? s.type : "oidc");
  return [h("h2", "Single sign-on"), h("p.muted", "Your people sign in with your company's identity provider (Okta, Entra ID, Keycloak...) by OpenID Connect or SAML 2.0."), box,
    s ? actionButton("Turn off single sign-on", async () => {
      if (!(await confirmDialog("Turn off single sign-on? People then sign in by password or e-mailed link again.", "Turn off"))) return;
      await del("/team/sso");
      ctx.navigate("#/team");
    }, { class: "danger small" }) : null];
}

/** Under the sign-in form: "Continue with SSO" once the typed address's domain has it. */
export function ssoOffer(email) {
  const slot = h("div", { "aria-live": "polite" });
  email.addEventListener("change", async () => {
    const r = await get(`/auth/sso?email=${encodeURIComponent(email.value.trim())}`).catch(() => ({}));
    slot.replaceChildren(...(r.sso ? [h("a.button.oauth", { href: `${r.startUrl}?callbackUrl=%2F` }, "Continue with SSO"),
      r.enforced ? h("p.muted", "Your organisation signs you in: use single sign-on.") : ""] : []));
  });
  return slot;
}

/** "Provisioning (SCIM)" (owners): the base URL to paste, a new token (shown once), revoke. */
async function scimSection(ctx) {
  const s = await get("/team/scim");
  const slot = h("p", { "aria-live": "polite" }, s.enabled && `Token made ${when(s.createdAt)}`);
  return [h("h2", "Provisioning (SCIM)"), h("p", "Base URL: ", h("code", s.baseUrl)), slot,
    actionButton("Create token", async () => {
      const { token } = await post("/team/scim-token");
      slot.replaceChildren("Shown once: ", h("code", token), " ",
        actionButton("Copy token", async () => toast((await copyText(token)) ? "Copied" : "Copy it by hand", "ok"), { class: "small" }));
    }),
    s.enabled && actionButton("Revoke token", async () => {
      if (!(await confirmDialog("Stop provisioning now?", "Revoke"))) return;
      await del("/team/scim-token");
      ctx.navigate("#/team");
    }, { class: "danger small" })];
}

// ── Profile: your display name and picture (what visitors see of you), how you hear of new
// handoffs, and your password.

/** The picture: a preview, upload (PUT /me/avatar) and remove. */
function avatarCard(ctx, member) {
  const preview = h("div.avatar-big", avatar({ ...member, name: member.name || ctx.session.user.email }));
  const file = h("input", { type: "file", required: true, accept: "image/png,image/jpeg,image/webp,image/gif" });
  return onSubmit(h("form.stack.card.profile", { "aria-label": "Your picture" },
    h("h2", "Picture"),
    preview,
    field("Picture file", file, "PNG, JPEG, WebP or GIF, at most 256 KB: shown to visitors beside your replies."),
    h("div.row",
      h("button", { type: "submit" }, "Upload picture"),
      member.avatarUrl ? actionButton("Remove picture", async () => {
        await del("/me/avatar");
        toast("Picture removed");
        ctx.restart();
      }, { class: "secondary" }) : null)), async () => {
    const { avatarUrl } = await put("/me/avatar", file.files[0]);
    mount(preview, avatar({ avatarUrl }));
    toast("Picture saved");
    ctx.team = await get("/team/context");
  });
}

/** An e-mail, a desktop notification, a sound: for each visitor who asks for a person. */
function notifyCard(ctx, member) {
  const box = (name, label) => field(label, h("input", { type: "checkbox", name, checked: Boolean(member[name]) }));
  return onSubmit(h("form.stack.card.profile", { "aria-label": "Notifications" },
    h("h2", "Notifications"),
    h("p.muted", "When a visitor asks for a person:"),
    box("notifyHandoffs", "E-mail me"),
    box("notifyBrowser", "Show a desktop notification"),
    box("notifySound", "Play a sound"),
    h("button", { type: "submit" }, "Update notifications")), async (data) => {
    const body = Object.fromEntries(["notifyHandoffs", "notifyBrowser", "notifySound"].map((k) => [k, data.has(k)]));
    await patch("/team/members/me", body);
    ctx.team = await get("/team/context");
    toast("Notifications saved");
    if (body.notifyBrowser && window.Notification && Notification.permission === "default") await Notification.requestPermission();
  });
}

function passwordCard() {
  const input = (name, autocomplete) => h("input", { type: "password", name, autocomplete, maxlength: 1000 });
  const form = onSubmit(h("form.stack.card.profile", { "aria-label": "Password" },
    h("h2", "Password"),
    field("Current password", input("currentPassword", "current-password"), "Empty if you have none yet."),
    field("New password", input("newPassword", "new-password")),
    h("button", { type: "submit" }, "Change password")), async (data) => {
    const body = { currentPassword: String(data.get("currentPassword")) || undefined, newPassword: String(data.get("newPassword")) };
    await post("/auth/password", body);
    form.reset();
    toast("Password changed: your other sessions are signed out");
  });
  return form;
}

/** The signed-in user's display name, picture, notifications and password. */
export async function renderProfile(ctx, page) {
  const user = ctx.session.user;
  const team = ctx.session.team;
  const member = me(ctx);
  const form = onSubmit(h("form.stack.card.profile", { "aria-label": "Change your name" },
    field("Display name", h("input", { name: "name", required: true, maxlength: 80, autocomplete: "name", value: user.name || "" }),
      `What visitors see when you take or answer a conversation. Without one they see the team's name, “${team.name}”; never your e-mail address.`),
    h("button", { type: "submit" }, "Save")), async (data) => {
    const name = String(data.get("name")).trim();
    if (!name) throw new Error("name: must not be empty");
    const saved = await patch("/team/members/me", { name });
    toast(`Display name saved: ${saved.name}`);
    ctx.restart();
  });
  mount(page,
    pageHeader("Profile", `Signed in as ${user.email}. Your name and picture are yours in every team you belong to.`),
    user.name ? null : h("p.notice", { role: "status" }, `You have no display name yet: visitors see “${team.name}” when you answer them.`),
    h("div.grid2", form, avatarCard(ctx, member), notifyCard(ctx, member), passwordCard()));
}

// The team's credentials. API keys: create (the key is shown once), list masked, revoke.
// Secrets: names and dates only (values never come back), set or replace, delete.

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
      ["Name", (k) => k.name || "—"],
      ["Key", (k) => h("code", `${k.prefix}…${k.last4}`)],
      ["User", (k) => members.get(k.userId) || k.userId],
      ["Created", (k) => when(k.createdAt)],
      ["", (k) => deleteButton("Revoke", `Revoke key ${k.name || k.prefix}? Anything using it stops working at once.`, "Revoke key",
        `/api-keys/${enc(k.id)}`, "Key revoked", refreshList, { class: "danger small", "aria-label": `Revoke ${k.name || k.prefix}` })],
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
      ["Name", (s) => h("code", s.name)],
      ["Created", (s) => when(s.createdAt)],
      ["Updated", (s) => when(s.updatedAt)],
      ["", (s) => deleteButton("Delete", `Delete secret ${s.name}? Tools using it will fail.`, "Delete secret",
        `/secrets/${enc(s.name)}`, `Secret ${s.name} deleted`, () => ctx.navigate("#/secrets"), { class: "danger small", "aria-label": `Delete ${s.name}` })],
    ], secrets, "No secrets yet."));
}
