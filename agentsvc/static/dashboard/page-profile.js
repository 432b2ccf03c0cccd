// Profile: your display name (what visitors see of you), and the address you sign in with.

import { patch } from "./api.js";
import { field, h, mount, toast } from "./dom.js";
import { onSubmit, pageHeader } from "./forms.js";

/** The signed-in user's display name, editable; visitors never see the e-mail address. */
export async function renderProfile(ctx, page) {
  const user = ctx.session.user;
  const team = ctx.session.team;
  const form = onSubmit(h("form", { class: "stack card profile", "aria-label": "Change your name" },
    field("Display name", h("input", { name: "name", required: true, maxlength: 80, autocomplete: "name", value: user.name || "" }),
      `What visitors see when you take or answer a conversation. Without one they see the team's name, “${team.name}”; never your e-mail address.`),
    h("button", { type: "submit" }, "Save")), async (data) => {
    const name = String(data.get("name")).trim();
    if (!name) throw new Error("name: must not be empty");
    const member = await patch("/team/members/me", { name });
    toast(`Display name saved: ${member.name}`);
    ctx.restart();
  });
  mount(page,
    pageHeader("Profile", `Signed in as ${user.email}. Your name is yours in every team you belong to.`),
    user.name ? null : h("p", { class: "notice", role: "status" }, `You have no display name yet: visitors see “${team.name}” when you answer them.`),
    form);
}
