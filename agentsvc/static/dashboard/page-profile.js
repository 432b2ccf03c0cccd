// Profile: your display name and picture (what visitors see of you), how you hear of new
// handoffs, and your password.

import { del, get, patch, post, put } from "./api.js";
import { avatar, field, h, mount, toast } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";
import { me } from "./page-inbox.js";

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
