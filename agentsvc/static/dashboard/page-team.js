// Team: members (remove), invitations (invite, cancel) — management is the owner's.

import { del, get, post } from "./api.js";
import { confirmDialog, field, h, mount, select, table, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";
import { ROLE, choices, invitationStatus, role } from "./labels.js";

/** Members for everyone; invite, cancel and remove for the owner only. */
export async function renderTeam(ctx, page) {
  const context = await get("/team/context");
  ctx.team = context;
  const owner = context.isOwner;
  const members = context.members;
  const invitations = owner ? await get("/team/invitations") : [];
  const memberColumns = [
    { label: "Name", cell: (m) => m.name || "—" },
    { label: "E-mail", cell: (m) => m.email },
    { label: "Role", cell: (m) => h("span", { class: `tag ${m.role}` }, role(m.role)) },
    { label: "Joined", cell: (m) => when(m.createdAt) },
  ];
  if (owner) {
    memberColumns.push({
      label: "",
      cell: (m) => (m.role === "owner" ? "" : actionButton("Remove", async () => {
        if (!(await confirmDialog(`Remove ${m.email} from the team? Their sessions and API keys lose access at once.`, "Remove member"))) return;
        await del(`/team/members/${encodeURIComponent(m.memberId)}`);
        toast(`${m.email} removed`);
        ctx.navigate("#/team");
      }, { class: "danger small", "aria-label": `Remove ${m.email}` })),
    });
  }
  const sections = [
    pageHeader("Team", owner ? "You own this team: invite and remove members here." : `Owner: ${context.owner.name || context.owner.email}. Only the owner manages membership.`),
    h("h2", {}, "Members"),
    table(memberColumns, members, "No members.", "Members"),
  ];
  if (owner) {
    const form = onSubmit(h("form", { class: "row card invite", "aria-label": "Invite a member" },
      field("E-mail", h("input", { name: "email", type: "email", required: true, placeholder: "colleague@example.com" })),
      field("Role", select(choices(ROLE).reverse(), "member", { name: "role" })),
      h("button", { type: "submit" }, "Send invitation")), async (data) => {
      const inv = await post("/team/invite", { email: String(data.get("email")).trim(), role: data.get("role") });
      toast(`Invitation sent to ${inv.email}`);
      ctx.navigate("#/team");
    });
    const invColumns = [
      { label: "E-mail", cell: (i) => i.email },
      { label: "Role", cell: (i) => role(i.role) },
      { label: "Status", cell: (i) => h("span", { class: `tag ${i.status === "pending" ? "warn" : ""}` }, invitationStatus(i.status)) },
      { label: "Expires", cell: (i) => when(i.expiresAt) },
      {
        label: "",
        cell: (i) => (i.status !== "pending" ? "" : actionButton("Cancel", async () => {
          await del(`/team/invitations/${encodeURIComponent(i.id)}`);
          toast(`Invitation to ${i.email} cancelled`);
          ctx.navigate("#/team");
        }, { class: "secondary small", "aria-label": `Cancel invitation to ${i.email}` })),
      },
    ];
    sections.push(h("h2", {}, "Invite"), form,
      h("p", { class: "muted" }, "The invitation link is e-mailed (without SMTP configured, it is written to the server log). It lasts 7 days."),
      h("h2", {}, "Invitations"), table(invColumns, invitations, "No invitations yet.", "Invitations"));
  }
  mount(page, sections);
}
