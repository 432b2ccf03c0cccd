// An agent's experiments (#/agents/ID/experiments[/EXP]): the running one or a form to
// start one, the past ones, and one experiment's figures per version with their intervals.
// Members may start and stop them as the owner may (the API asks no role).

import { enc, get, post } from "./api.js";
import { confirmDialog, field, h, mount, table, toast, when } from "./dom.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";

// The API's figures in its order: [key, label, unit] (rates in %, submissions a count).
const FIGURES = [
  ["upRate", "Answers rated 👍", " %"],
  ["downRate", "Answers rated 👎", " %"],
  ["unansweredRate", "Answers that found nothing", " %"],
  ["handoffRate", "Conversations handed to a person", " %"],
  ["submissionsPerConversation", "Form submissions per conversation", ""],
];

/** A figure for people: "42 % (35–49 %)", the 95 % interval in brackets. */
const figure = (f, unit) => {
  const n = (v) => (unit ? Math.round(v) : v.toFixed(2));
  return f.value === null ? "Not measured yet" : `${n(f.value)}${unit} (${n(f.low)}–${n(f.high)}${unit})`;
};
const versions = (e) => e.variants.map((v) => `version ${v.version}`).join(", ");

/** The Experiments page of one agent; `chosen`: the experiment named in the address. */
export async function renderExperiments(ctx, page, id, chosen) {
  const base = `#/agents/${enc(id)}/experiments`;
  const agent = await get(`/agents/${enc(id)}`);
  if (ctx.agentId !== agent.id) ctx.setAgent(agent.id);
  const back = h("a.button.secondary", { href: chosen ? base : `#/agents/${enc(id)}` }, chosen ? "All experiments" : "Back to the agent");
  if (chosen) return mount(page, await experiment(ctx, agent, chosen, back));
  const [past, listed] = await Promise.all([get(`/agents/${enc(id)}/experiments`), get(`/agents/${enc(id)}/versions`)]);
  const running = agent.experiment;
  const link = (e) => h("a", { href: `${base}/${enc(e.id)}` }, when(e.createdAt));
  mount(page,
    pageHeader(`Experiments on ${agent.name}`, "Try versions of the agent on real visitors side by side, then keep the one that does best.", back),
    running
      ? h("section.card", h("h2", "Running now"), h("p", "Comparing ", versions(running), ". ", h("a", { href: `${base}/${enc(running.id)}` }, "See its figures or stop it")),
        h("p.muted", "Only one experiment runs at a time: stop this one to start another."))
      : listed.data.length > 1 ? startForm(ctx, agent, listed.data, base) : h("p.empty", "An experiment compares versions: change the agent to make a second one."),
    h("h2", "All experiments"),
    table([["Started", link], ["Versions", versions], ["Status", (e) => (e.status === "running" ? "Running" : "Stopped")], ["Live after it", (e) => (e.winner ? `Version ${e.winner}` : "")]],
      past, "No experiments yet.", "All experiments"));
}

/** Choose 2 to 5 versions, each with a weight. */
function startForm(ctx, agent, listed, base) {
  const rows = listed.map((v, i) => [
    field([`Version ${v.number}`, v.note && ` · ${v.note}`, v.live && " (live)"], h("input", { type: "checkbox", name: "v", value: v.number, checked: i < 2 })),
    h("input", { type: "number", name: `w${v.number}`, min: 0, step: "any", value: 1, required: true, "aria-label": `Weight of version ${v.number}` })]);
  return onSubmit(h("form.card.stack", { "aria-label": "Start an experiment" },
    h("h2", "Start an experiment"),
    h("p", "New conversations are split among these versions by weight; a visitor keeps the version they got."),
    h("fieldset.weights", h("legend", "Versions to compare (2 to 5) and their weights"), rows),
    h("button", { type: "submit" }, "Start experiment")), async (data) => {
    const chosen = data.getAll("v");
    if (chosen.length < 2 || chosen.length > 5) throw new Error("Choose 2 to 5 versions to compare.");
    const started = await post(`/agents/${enc(agent.id)}/experiments`, { variants: chosen.map((n) => ({ version: Number(n), weight: Number(data.get(`w${n}`)) })) });
    toast("Experiment started");
    ctx.navigate(`${base}/${enc(started.id)}`);
  });
}

/** One experiment: its figures per version, who leads, and stopping it. */
async function experiment(ctx, agent, expId, back) {
  const e = await get(`/experiments/${enc(expId)}`);
  const { variants, leading } = e.results;
  const stop = (winner) => actionButton(winner ? `Stop and make version ${winner} live` : "Stop without a winner", async () => {
    const question = winner ? `Stop the experiment and make version ${winner} live? Every visitor then gets it.` : `Stop the experiment? Every visitor then gets the live version (version ${agent.version}).`;
    if (!(await confirmDialog(question, "Stop experiment"))) return;
    await post(`/experiments/${enc(e.id)}/stop`, winner ? { winner } : {});
    toast(winner ? `Experiment stopped: version ${winner} is live` : "Experiment stopped");
    ctx.navigate(location.hash);
  }, { class: winner ? null : "secondary" });
  const card = (v) => h("section.card", h("h2", `Version ${v.version}`, e.winner === v.version ? [" ", h("span.tag.good", "Winner")] : null),
    h("p.muted", `Weight ${v.weight}: ${Math.round((100 * v.weight) / total)} % of new conversations`),
    h("dl.figures", [["Conversations", v.conversations], ["Answers", v.answers]].map(([k, n]) => h("div", h("dt", k), h("dd", String(n)))),
      FIGURES.map(([key, label, unit]) => h("div", h("dt", label), h("dd", figure(v[key], unit), leading[key] === v.version ? [" ", h("span.tag.good", "Leading")] : null)))));
  const total = variants.reduce((sum, v) => sum + v.weight, 0);
  const running = e.status === "running";
  return [
    pageHeader(`Experiment on ${agent.name}`, `${running ? "Running" : "Stopped"} · started ${when(e.createdAt)}${running ? "" : ` · stopped ${when(e.stoppedAt)}`}`, back),
    running ? null : h("p.notice", e.winner ? `Version ${e.winner} won and was made live.` : "Stopped without a winner: the live version stayed as it was."),
    h("p.muted", "Each figure shows its 95 % interval in brackets. “Leading” marks a version only where its interval clears every other version's: a difference that could be chance is not called."),
    h("div.grid3", variants.map(card)),
    running ? h("section", { "aria-label": "Stop the experiment" }, h("h2", "Stop the experiment"),
      h("p", "Keep a version: it goes live for every visitor. Without a winner, visitors go back to the live version."),
      h("div.row", variants.map((v) => stop(v.version)), stop(null))) : null,
  ];
}
