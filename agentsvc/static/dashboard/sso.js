// Single sign-on: the Team page's section (owners) and the sign-in page's "Continue with SSO".

import { del, get, post, put } from "./api.js";
import { confirmDialog, copyText, field, h, select, toast } from "./dom.js";
import { actionButton, onSubmit } from "./forms.js";

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
