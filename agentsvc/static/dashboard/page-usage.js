// Usage: the team's tokens and what they cost per day (charts.js), per agent and per model,
// and the monthly budgets of the team and of each agent (a calendar month of UTC).

import { del, enc, get, patch, put, qs } from "./api.js";
import { button, field, h, mount, table, toast } from "./dom.js";
import { chartCard, dayLabel, timeSeries } from "./charts.js";
import { actionButton, onSubmit, pageHeader } from "./forms.js";
import { modelName } from "./labels.js";

const view = { days: 30 };
const n = (x) => Number(x || 0).toLocaleString();
const money = (x, cur) => `${Number(x || 0).toLocaleString(undefined, { maximumFractionDigits: 6 })} ${cur}`;

/** What a budget stands at this month, in words. */
function standing(b, cur) {
  if (!b) return "No budget: nothing stops the answers.";
  const said = `${money(b.spent, cur)} spent of ${money(b.monthlyLimit, cur)} this month (${b.percentUsed} %).`;
  return b.limitReached ? `${said} Limit reached: the offline message answers until the month ends (${dayLabel(b.resetsAt.slice(0, 10), true)}, UTC) or the limit is raised.` : said;
}

/** A budget form: the limit, the warning, save and remove; `save(body|null)`. */
function budgetForm(label, b, cur, owner, save) {
  const limit = h("input", { name: "limit", type: "number", min: "0.01", step: "0.01", required: true, value: b ? b.monthlyLimit : "" });
  const warn = h("input", { name: "warn", type: "number", min: "1", max: "99", step: "1", value: b ? b.warnAtPercent ?? "" : "80" });
  const form = onSubmit(h("form.stack.card", { "aria-label": label },
    h("h3", label),
    h("p", b && b.limitReached ? h("strong", standing(b, cur)) : standing(b, cur)),
    owner ? [
      h("div.row",
        field(`Monthly limit (${cur})`, limit),
        field("Warn me at (%)", warn)),
      h("p.muted", "Once a month the owners get an e-mail (and webhooks a budget.warning event) when the spending reaches that share of the limit; empty: only at the limit. At the limit the agent answers with its offline message (visitors can still ask for a person) until the month ends or the limit is raised."),
      h("div.row", h("button", { type: "submit" }, "Save budget"),
        b ? actionButton("Remove budget", () => save(null), { class: "secondary" }) : null),
    ] : h("p.muted", "Only an owner changes budgets.")), async (data) => {
    const w = String(data.get("warn") || "").trim();
    await save({ monthlyLimit: Number(data.get("limit")), warnAtPercent: w ? Number(w) : null });
  });
  return form;
}

function figures(rows, first) {
  return table([
    first,
    ["Answers", (r) => n(r.answers)],
    ["Input tokens", (r) => n(r.inputTokens)],
    ["Output tokens", (r) => n(r.outputTokens)],
    ["Cost", (r) => (r.priced === false ? "No price set" : money(r.cost, view.cur))],
  ], rows, "No answers in this range.", first[0] === "Agent" ? "Usage per agent" : "Usage per model");
}

function dayChart(report, heading, series, whole) {
  const days = report.rows.map((r) => ({ ...r, date: r.day }));
  return chartCard({
    heading,
    draw: (width) => timeSeries(days, series, { title: `${heading} per day, ${dayLabel(report.from, true)} to ${dayLabel(report.to, true)}`, whole }, width),
    csv: () => ({ file: `usage-${report.from}-to-${report.to}`, header: ["Day", ...series.map((s) => s.label)], rows: days.map((d) => [d.date, ...series.map((s) => d[s.key])]) }),
  });
}

/** The range, the totals, the charts, the tables and the budgets. */
export async function renderUsage(ctx, page) {
  const to = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.now() - (view.days - 1) * 86400000).toISOString().slice(0, 10);
  const [report, agents, models, budgets] = await Promise.all(["day", "agent", "model"].map((groupBy) =>
    get(`/usage${qs({ from, to, groupBy })}`)).concat(get("/team/budget")));
  const cur = (view.cur = report.currency);
  const t = report.totals;
  const redo = () => ctx.navigate("#/usage");
  const saveAgent = (id) => async (budget) => {
    await patch(`/agents/${enc(id)}`, { budget });
    toast(budget ? "Budget saved" : "Budget removed");
    redo();
  };
  const picked = budgets.agents.find((a) => a.agentId === ctx.agentId) || budgets.agents[0];
  mount(page,
    pageHeader("Usage and costs", "Tokens the models used and what they cost, per day, agent and model; budgets per calendar month (UTC)."),
    h("div.row.presets", { role: "group", "aria-label": "Range" }, [7, 30, 90].map((d) =>
      button(`Last ${d} days`, () => { view.days = d; redo(); }, { "aria-pressed": String(view.days === d) }))),
    h("ul.stat-cards", { "aria-label": "Totals" }, [["Answers", n(t.answers)], ["Input tokens", n(t.inputTokens)],
      ["Output tokens", n(t.outputTokens)], ["Cost", money(t.cost, cur)]].map(([label, value]) =>
      h("li.card.stat", h("span.stat-label", label), h("strong.stat-value", value)))),
    models.rows.some((r) => r.priced === false) && h("p.muted", "Answers of a model without a price count as 0: prices are set by whoever runs the server ([prices] in its configuration)."),
    h("div.charts.wide",
      dayChart(report, "Tokens", [{ key: "inputTokens", label: "Input tokens" }, { key: "outputTokens", label: "Output tokens" }], true),
      dayChart(report, "Cost", [{ key: "cost", label: `Cost (${cur})` }], false)),
    h("h2", "Per agent"),
    figures(agents.rows, ["Agent", (r) => r.agentName || "(deleted agent)"]),
    h("h2", "Per model"),
    figures(models.rows, ["Model", (r) => modelName(r.model)]),
    h("h2", "Budgets"),
    budgetForm("Team budget", budgets.budget, cur, ctx.isOwner, async (budget) => {
      if (budget) await put("/team/budget", budget);
      else await del("/team/budget");
      toast(budget ? "Team budget saved" : "Team budget removed");
      redo();
    }),
    picked ? [
      field("Agent to set a budget for", h("select", { onchange: (e) => { ctx.setAgent(e.target.value); redo(); } },
        budgets.agents.map((a) => h("option", { value: a.agentId, selected: a === picked }, a.agentName)))),
      budgetForm(`Budget of ${picked.agentName}`, picked.budget, cur, ctx.isOwner, saveAgent(picked.agentId)),
    ] : null);
}
