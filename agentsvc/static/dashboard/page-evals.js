// An agent's evaluations (#/agents/ID/evals[/SET[/RUN]]): its sets and the check before
// publishing; one set's cases, imports and runs; one run's results, live while it runs.
// Any member may do all of it (the API asks no owner); only forcing a refused publish is
// the owner's, under Versions.

import { enc, get, patch, post } from "./api.js";
import { field, h, mount, select, table, toast, when } from "./dom.js";
import { actionButton, deleteButton, onSubmit, pageHeader } from "./forms.js";
import { live } from "./page-inbox.js";

const STATUS = { queued: "Waiting to start", running: "Running", done: "Done", failed: "Failed" };
const open = (run) => run.status === "queued" || run.status === "running";
const score = (run) => `${run.passed} of ${run.total} passed (${run.passRate} %)`;
const named = (v) => (v === "draft" ? "The draft" : `Version ${v}`);
/** Words typed comma-separated or one per line, as a list. */
const words = (text) => String(text).split(/[,\n]/).map((w) => w.trim()).filter(Boolean);
const back = (href, label) => h("a.button.secondary", { href }, label);

/** The Evaluations page; `set` and `run`: the ones named in the address. */
export async function renderEvals(ctx, page, id, set, run) {
  const agent = await get(`/agents/${enc(id)}`);
  if (ctx.agentId !== agent.id) ctx.setAgent(agent.id);
  page.classList.add("evals");
  const home = `#/agents/${enc(agent.id)}/evals`;
  if (run) return runPage(ctx, page, home, set, run);
  if (set) return setPage(page, agent, home, set);
  const sets = await get(`/agents/${enc(agent.id)}/evalsets`);
  const create = onSubmit(h("form.row", { "aria-label": "New set" },
    field("Name of a new set", h("input", { name: "name", required: true, maxlength: 200, placeholder: "Opening hours" })),
    h("button", { type: "submit" }, "Create set")), async (data) => {
    const made = await post(`/agents/${enc(agent.id)}/evalsets`, { name: String(data.get("name")).trim() });
    ctx.navigate(`${home}/${enc(made.id)}`);
  });
  mount(page,
    pageHeader(`Evaluations of ${agent.name}`, "Check a version on questions whose good answer you know. Any member of the team can change the sets, run them and set the check before publishing.",
      back(`#/agents/${enc(agent.id)}`, "Back to the agent")),
    h("section.card.stack", { "aria-label": "Sets" }, h("h2", "Sets"),
      table([["Set", (s) => h("a", { href: `${home}/${enc(s.id)}` }, s.name)], ["Cases", (s) => String(s.caseCount)], ["Created", (s) => when(s.createdAt)]],
        sets, "No sets yet: create the first one below.", "Evaluation sets"),
      create),
    gateForm(agent, sets));
}

/** The check before publishing: the agent's publishGate. */
function gateForm(agent, sets) {
  const gate = agent.publishGate || {};
  const number = (name, value) => h("input", { name, type: "number", min: 0, max: 100, step: "any", required: true, value });
  return onSubmit(h("form.stack.card", { "aria-label": "Check before publishing" },
    h("h2", "Check before publishing"),
    h("p", "Before a draft is published, this set runs on it and on the live version; publishing is refused when the draft passes less than the minimum, or drops more points below the live version than allowed. Only the team owner can then publish it anyway."),
    field("Set", select([["", "None: publish without a check"]].concat(sets.map((s) => [s.id, s.name])), gate.evalsetId || "", { name: "set" })),
    h("div.grid2",
      field("Minimum pass rate (%)", number("min", gate.minPassRate ?? 90)),
      field("Largest drop against the live version (points)", number("drop", gate.maxDrop ?? 5))),
    h("button", { type: "submit" }, "Save the check")), async (data) => {
    const evalsetId = data.get("set");
    const saved = await patch(`/agents/${enc(agent.id)}`, { publishGate: evalsetId ? { evalsetId, minPassRate: Number(data.get("min")), maxDrop: Number(data.get("drop")) } : null });
    toast(saved.publishGate ? "Saved: each publish is checked first" : "Saved: drafts are published without a check");
  });
}

/** What a case checks, in words. */
const checks = (c) => [
  c.expected && `Expected: ${c.expected}`,
  c.mustInclude.length && `Must mention: ${c.mustInclude.join(", ")}`,
  c.mustNotInclude.length && `Must not mention: ${c.mustNotInclude.join(", ")}`,
  c.tags.length && `Tags: ${c.tags.join(", ")}`,
].filter(Boolean).map((line) => h("div", line));

/** One set: its cases (added, imported, deleted) and its runs. */
async function setPage(page, agent, home, id) {
  const path = `/evalsets/${enc(id)}`;
  const [set, runs] = await Promise.all([get(`/evalsets/${enc(id)}`), get(`/evalsets/${enc(id)}/runs`)]);
  const cases = h("div");
  const load = async () => mount(cases, table([
    ["Question", (c) => c.question], ["Checks", checks],
    ["", (c) => deleteButton("Delete", `Delete the case "${c.question}"? Past runs keep its result.`, "Delete case", `${path}/cases/${enc(c.id)}`, "Case deleted", load, { class: "danger small", "aria-label": `Delete case: ${c.question}` })],
  ], await get(`/evalsets/${enc(id)}/cases`), "No cases yet: add one below, or import them.", "Cases of the set"));
  const add = onSubmit(h("form.stack.card", { "aria-label": "Add a case" },
    h("h2", "Add a case"),
    h("p.muted", "A case needs at least one check: an expected answer, or words the answer must or must not mention."),
    field("Question", h("input", { name: "question", required: true, maxlength: 2000, placeholder: "When do you open on Sundays?" })),
    field("Expected answer (optional)", h("textarea", { name: "expected", rows: 2 }), "What a good answer says. A judge model compares the answer with it; without one, the answer must hold most of its words."),
    h("div.grid2",
      field("The answer must mention", h("textarea", { name: "must", rows: 2, placeholder: "ten" }), "Words or phrases, separated by commas or one per line."),
      field("The answer must not mention", h("textarea", { name: "not", rows: 2 }), "Same, for what a good answer never says.")),
    field("Tags (optional)", h("input", { name: "tags", placeholder: "hours, weekend" }), "Your own labels, separated by commas."),
    h("button", { type: "submit" }, "Add case")), async (data) => {
    const expected = String(data.get("expected")).trim();
    await post(`/evalsets/${enc(id)}/cases`, { question: String(data.get("question")).trim(), expected: expected || undefined, mustInclude: words(data.get("must")), mustNotInclude: words(data.get("not")), tags: words(data.get("tags")) });
    add.reset();
    toast("Case added");
    await load();
  });
  const importing = (from, label) => actionButton(label, async () => {
    const done = await post(`/evalsets/${enc(id)}/import`, { from });
    toast(done.imported ? `${done.imported} case(s) added` : "Nothing new to add");
    await load();
  }, { class: "secondary" });
  // The live version by default; the draft when one waits; or any earlier version.
  const versions = [["", `The live version (${agent.version})`]].concat(agent.draft ? [["draft", "The draft"]] : [],
    Array.from({ length: agent.version - 1 }, (_, i) => [String(agent.version - 1 - i), named(agent.version - 1 - i)]));
  const run = onSubmit(h("form.stack.card", { "aria-label": "Run the set" },
    h("h2", "Run the set"),
    h("div.grid2",
      field("Version", select(versions, agent.draft ? "draft" : "", { name: "version" })),
      field("Judge model (optional)", h("input", { name: "judge", maxlength: 300, placeholder: "openai/gpt-4o-mini" }), "A model of this server's providers that compares each answer with the expected one. Empty: only the words count.")),
    h("button", { type: "submit" }, "Run")), async (data) => {
    const version = String(data.get("version"));
    const judge = String(data.get("judge")).trim();
    const started = await post(`/evalsets/${enc(id)}/runs`, { version: version === "draft" ? version : Number(version) || undefined, judge: judge || undefined });
    location.hash = `${home}/${enc(id)}/${enc(started.id)}`;
  });
  await load();
  mount(page,
    pageHeader(set.name, `A set of ${agent.name}'s evaluations.`, back(home, "All sets"),
      deleteButton("Delete set", `Delete the set "${set.name}" with its cases and runs?`, "Delete set", path, "Set deleted", () => (location.hash = home))),
    h("section.card.stack", { "aria-label": "Cases" }, h("h2", "Cases"), cases,
      h("div.row.imports", h("strong", "Import cases:"), importing("curated", "From curated answers"), importing("feedback", "From 👎 answers that now have a curated answer"))),
    add,
    run,
    h("section.card.stack", { "aria-label": "Runs" }, h("h2", "Runs"), table([
      ["Started", (r) => h("a", { href: `${home}/${enc(id)}/${enc(r.id)}` }, when(r.createdAt))],
      ["Version", (r) => named(r.version)], ["Status", (r) => STATUS[r.status]], ["Result", score],
    ], runs, "No runs yet.", "Runs of the set")));
}

/** One case's result: the verdict in words (not by colour alone), why, the answer. */
const result = (r) => h("li.card",
  h("h3", r.question),
  h("p", h(`span.tag.${r.passed ? "good" : "bad"}`, r.passed ? "✓ Passed" : "✗ Failed"), ` ${r.reason}`),
  h("details", h("summary", `The answer (in ${r.latencyMs < 1e3 ? `${r.latencyMs} ms` : `${(r.latencyMs / 1e3).toFixed(1)} s`})`), h("p.answer-text", r.answer)));

/** One run: its progress, live from its events while it runs, then each case's result. */
async function runPage(ctx, page, home, setId, id) {
  const [set, first] = await Promise.all([get(`/evalsets/${enc(setId)}`), get(`/eval-runs/${enc(id)}`)]);
  const status = h("p", { role: "status" });
  const list = h("ol.results");
  const draw = (run) => {
    mount(status, h("strong", `${STATUS[run.status]}: `), open(run) ? `${run.done} of ${run.total} cases answered` : score(run), run.error ? ` ${run.error}` : null);
    mount(list, run.results.map(result));
  };
  draw(first);
  if (open(first)) {
    // Each event says a case was scored: read the run again for its result.
    let seq = 0;
    const source = live(ctx, `/eval-runs/${enc(id)}/events`, async (name) => {
      if (name === "end") source.close();
      const mine = ++seq;
      const run = await get(`/eval-runs/${enc(id)}`);
      if (mine === seq) draw(run); // not an older answer over a newer one
    }, ["progress", "end"]);
  }
  mount(page,
    pageHeader(`${named(first.version)} on “${set.name}”`, `Started ${when(first.createdAt)}${first.judge ? `, judged by ${first.judge}` : ""}.`, back(`${home}/${enc(setId)}`, "Back to the set")),
    status,
    list);
}
