// Pages shown before the app: first-run owner creation, sign-in, accepting an invitation.

import { ApiError, enc, get, post } from "./api.js";
import { field, h, mount } from "./dom.js";
import { onSubmit } from "./forms.js";
import { ssoOffer } from "./page-team.js";

function card(title, ...children) {
  return h("div.auth",
    h("div.card.narrow",
      h("p.brand.big", "agentsvc"),
      h("h1", title),
      children));
}

// Visitors see a member's display name (else the team's name), never the address.
const NAME_HINT = "Shown to visitors when you answer them (without one, they see your team's name). You can change it later on your Profile page.";

function input(attrs) {
  return h("input", attrs);
}

/** First run: no user exists yet, so the page offers to create the owner account. */
export function renderSetup(root, ctx) {
  const form = h("form.stack", { novalidate: true },
    field("Your name", input({ name: "name", autocomplete: "name", maxlength: 80 }), NAME_HINT),
    field("E-mail", input({ name: "email", type: "email", required: true, autocomplete: "email" })),
    field("Password", input({ name: "password", type: "password", required: true, minlength: 8, autocomplete: "new-password" }), "At least 8 characters."),
    h("button", { type: "submit" }, "Create owner account"));
  onSubmit(form, async (data) => {
    const password = data.get("password");
    if (password.length < 8) throw new Error("password: at least 8 characters");
    await post("/setup", { email: data.get("email"), password, name: data.get("name") });
    ctx.restart();
  });
  root.classList.remove("loading");
  mount(root, card("Welcome — create the owner account",
    h("p.muted", "This instance has no account yet. The first account owns the team: it creates agents, invites members and manages API keys."),
    form));
}

/** Sign-in: password, magic link, a button per configured OAuth provider, and "Continue
 * with SSO" once the typed address's domain signs in through its team's provider. */
export async function renderSignIn(root, ctx) {
  let providers = [];
  let mailDelivery = "smtp";
  try {
    const found = await get("/auth/providers");
    providers = found.providers || [];
    mailDelivery = found.mailDelivery || "smtp";
  } catch {
    providers = [];
  }
  const email = input({ name: "email", type: "email", required: true, autocomplete: "username" });
  const password = h("form.stack", { "aria-label": "Sign in with password" },
    field("E-mail", email),
    field("Password", input({ name: "password", type: "password", required: true, autocomplete: "current-password" })),
    h("button", { type: "submit" }, "Sign in"));
  onSubmit(password, async (data) => {
    await post("/auth/sign-in/email", { email: data.get("email"), password: data.get("password") });
    ctx.restart();
  });
  const magic = h("form.stack", { "aria-label": "Sign in with a link" },
    field("E-mail", input({ name: "email", type: "email", required: true })),
    h("button", { type: "submit", class: "secondary" }, "E-mail me a sign-in link"));
  onSubmit(magic, async (data) => {
    const email = String(data.get("email")).trim();
    await post("/auth/magic-link", { email, callbackUrl: location.origin + "/" });
    if (mailDelivery === "log") {
      // No SMTP: the link went to the server's log, not to the inbox.
      mount(magic, h("div.notice", { role: "status" },
        h("p", "Mail is not set up on this server, so if this address has an account, the link was written to the server's log (it works once, for 15 minutes)."),
        h("p", "Or make one on the server: ", h("code", `agentsvc login-link --email ${email}`))));
    } else {
      mount(magic, h("p.notice", { role: "status" }, "If this address has an account, a sign-in link is on its way. It works once, for 15 minutes."));
    }
  });
  const names = { github: "GitHub", google: "Google" };
  const oauth = providers.map((p) =>
    h("a.button.secondary.oauth", { href: `/api/v1/auth/sign-in/${enc(p)}?callbackUrl=${enc("/")}` },
      `Sign in with ${names[p] || p}`));
  root.classList.remove("loading");
  mount(root, card("Sign in",
    password,
    ssoOffer(email),
    h("div.divider", h("span", "or")),
    magic,
    oauth.length ? h("div.stack.oauth-list", oauth) : null));
}

/** The link of an invitation e-mail: /accept-invitation?token=... */
export async function renderAcceptInvitation(root, ctx) {
  const token = new URLSearchParams(location.search).get("token") || "";
  let session = null;
  try {
    session = await get("/auth/session", { quiet401: true });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) throw err;
  }
  const done = () => {
    location.replace("/#/agents");
  };
  root.classList.remove("loading");
  if (!token) {
    mount(root, card("Invitation", h("p.form-error", { role: "alert" }, "This invitation link has no token. Open the link from the e-mail again.")));
    return;
  }
  let form;
  if (session) {
    const askName = !session.user.name;
    form = h("form.stack",
      h("p", `You are signed in as ${session.user.email}. Accept the invitation with this account?`),
      askName ? field("Your name", input({ name: "name", autocomplete: "name", maxlength: 80 }), NAME_HINT) : null,
      h("button", { type: "submit" }, "Accept invitation"));
    onSubmit(form, async (data) => {
      const body = { token };
      if (askName && String(data.get("name") || "").trim()) body.name = String(data.get("name"));
      await post("/team/invitations/accept", body);
      done();
    });
  } else {
    form = h("form.stack",
      h("p.muted", "Choose a password to create your account. Already have one? Sign in first, then open the link again."),
      field("Your name", input({ name: "name", autocomplete: "name", maxlength: 80 }), NAME_HINT),
      field("Password", input({ name: "password", type: "password", required: true, minlength: 8, autocomplete: "new-password" })),
      h("button", { type: "submit" }, "Accept invitation"));
    onSubmit(form, async (data) => {
      const body = { token, password: data.get("password") };
      if (data.get("name")) body.name = data.get("name");
      await post("/team/invitations/accept", body);
      done();
    });
  }
  mount(root, card("Join the team", form, h("p", h("a", { href: "/" }, "Go to sign-in"))));
}
