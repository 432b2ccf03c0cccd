// Analytics: the agent's days (conversations, answers and their quality, the trigger funnel,
// unanswered questions) over a range of days, each total beside the one of the days before;
// handoffs; each form's funnel; the triggers' fired/converted counts. Charts are SVG drawn by
// the page (charts.js) in frames with tooltips and a CSV download (charts.js), each with
// a table of its figures.

import { enc, get, qs } from "./api.js";
import { button, field, h, mount, table, when } from "./dom.js";
import { chartCard, dayLabel, funnelChart, groupedBars, timeSeries } from "./charts.js";
import { pageHeader } from "./forms.js";
import { answerQuestion } from "./page-knowledge.js";

// The range shown (empty: the API's default, the last 30 days).
const range = { from: "", to: "" };
const PRESETS = [7, 30, 90];
const DAY_MS = 86400000;

// The API's figures in words (a small map of this page's own: no shared labels module yet).
const FIGURES = {
  conversations: "Conversations",
  visitorMessages: "Visitor messages",
  answers: "Answers",
  answersRatedUp: "Rated helpful",
  answersRatedDown: "Rated unhelpful",
  unanswered: "Unanswered",
  triggerFired: "Triggers fired",
  triggerConversations: "Chats from triggers",
  triggerSubmissions: "Forms from triggers",
};
// The cards: [figure, fewer is better].
const CARDS = [["conversations"], ["visitorMessages"], ["answers"], ["answersRatedUp"], ["unanswered", true], ["triggerConversations"]];
const VOLUME = ["conversations", "visitorMessages", "answers"];
const QUALITY = ["answersRatedUp", "answersRatedDown", "unanswered"];

// Every rate with one decimal (33.3 %, 50.0 %), within 0-100.
const pct = (n) => `${Math.min(100, Math.max(0, Number(n) || 0)).toFixed(1)} %`;

/** The UTC day `days` after (or before) a YYYY-MM-DD day. */
const shift = (iso, days) => new Date(Date.parse(`${iso}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
const todayUtc = () => new Date().toISOString().slice(0, 10);
const spanOf = (from, to) => Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS) + 1;

/** A name made as a code read as words: contact_form is "Contact form". */
function words(name) {
  const text = String(name || "").replace(/[_-]+/g, " ").trim();
  return text ? text[0].toUpperCase() + text.slice(1) : String(name || "");
}

/** Seconds as people read them: 45 s, 3 min 20 s, 2 h 5 min. */
function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The figures of a chart as a table, behind a disclosure (for screen readers and copying). */
function figuresTable(caption, columns, rows) {
  return h("details.figures-table",
    h("summary", `${caption}: the figures as a table`),
    table(columns, rows, "No figures.", caption));
}

/** How a figure moved since the period before: its words and whether that is good news. */
function change(now, before, lowerIsBetter) {
  if (before === undefined || before === null) return { text: "No earlier figures", cls: "muted" };
  if (now === before) return { text: `Same as before (${before})`, cls: "muted" };
  const up = now > before;
  const cls = up !== Boolean(lowerIsBetter) ? "good" : "bad";
  if (!before) return { text: `New (none before)`, cls, arrow: "▲" };
  const by = Math.round((Math.abs(now - before) / before) * 100);
  return { text: `${up ? "+" : "−"}${by} % from ${before}`, cls, arrow: up ? "▲" : "▼" };
}

/** The period's totals as cards, each with its change against the days before. */
function cards(data, previous) {
  const t = data.totals;
  const before = previous ? previous.totals : null;
  const days = data.days.length;
  const compared = previous
    ? `${dayLabel(data.from, true)} – ${dayLabel(data.to, true)}, compared with the ${days} ${days === 1 ? "day" : "days"} before (${dayLabel(previous.from, true)} – ${dayLabel(previous.to, true)}).`
    : `${dayLabel(data.from, true)} – ${dayLabel(data.to, true)}.`;
  return h("section.stats", { "aria-label": "Totals" },
    h("p.muted", compared),
    h("ul.stat-cards", CARDS.map(([key, lower]) => {
      const moved = change(t[key], before ? before[key] : null, lower);
      return h("li.card.stat",
        h("span.stat-label", FIGURES[key]),
        h("strong.stat-value", String(t[key])),
        key === "unanswered" ? h("span.muted", `${pct(t.unansweredRate)} of answers`) : null,
        h("span", { class: `stat-change ${moved.cls}` }, moved.arrow ? h("span", { "aria-hidden": "true" }, `${moved.arrow} `) : null, moved.text));
    })));
}

/** The range form: two days, or a preset of the last 7, 30 or 90 days. */
function rangeForm(ctx, data) {
  const today = todayUtc();
  const days = spanOf(data.from, data.to);
  const show = (from, to) => {
    range.from = from;
    range.to = to;
    ctx.navigate("#/analytics");
  };
  const form = h("form.row.range-form", { "aria-label": "Range of days", onsubmit: (e) => {
    e.preventDefault();
    const values = new FormData(form);
    show(String(values.get("from") || ""), String(values.get("to") || ""));
  } },
  h("div.presets", { role: "group", "aria-label": "Presets" }, PRESETS.map((n) =>
    button(`Last ${n} days`, () => show(shift(today, 1 - n), today), { class: "secondary", "aria-pressed": String(data.to === today && days === n) }))),
  field("From", h("input", { name: "from", type: "date", value: range.from || data.from })),
  field("To", h("input", { name: "to", type: "date", value: range.to || data.to })),
  h("button", { type: "submit" }, "Show"));
  return form;
}

/** A card of lines over the period's days, with its CSV. */
function daysCard(data, heading, keys, title, description) {
  const series = keys.map((key) => ({ key, label: FIGURES[key] }));
  return chartCard({
    heading,
    draw: (width) => timeSeries(data.days, series, { title, description }, width),
    csv: () => ({
      file: `${heading.toLowerCase().replace(/\W+/g, "-")}-${data.from}-to-${data.to}`,
      header: ["Day", ...series.map((sr) => sr.label)],
      rows: data.days.map((d) => [d.date, ...keys.map((key) => d[key] || 0)]),
    }),
  });
}

/** A funnel card: steps [{label, value}], with its CSV and what goes under it. */
function funnelCard(heading, title, file, steps, extra) {
  return chartCard({
    heading,
    draw: (width) => funnelChart(steps, { title }, width),
    csv: () => ({ file, header: ["Step", "Count"], rows: steps.map((st) => [st.label, st.value]) }),
    extra,
  });
}

/** The range, the cards, the daily charts, the trigger funnel and the unanswered questions. */
function activity(ctx, data, previous) {
  const t = data.totals;
  const span = `${dayLabel(data.from, true)} to ${dayLabel(data.to, true)}`;
  const volume = daysCard(data, "Activity", VOLUME, `Conversations, visitor messages and answers per day, ${span}`,
    `${t.conversations} conversations, ${t.visitorMessages} visitor messages, ${t.answers} answers in all.`);
  const quality = daysCard(data, "Answer quality", QUALITY, `Answer quality per day, ${span}`,
    `${t.answersRatedUp} rated helpful, ${t.answersRatedDown} rated unhelpful, ${t.unanswered} unanswered.`);
  const dayTable = figuresTable("Figures per day", [
    ["Day", (d) => dayLabel(d.date, true)],
    ...Object.entries(FIGURES).map(([key, label]) => [label, (d) => String(d[key])]),
  ], data.days);
  const triggerTable = table([
    ["Trigger", (r) => r.name || "(deleted trigger)"],
    ["Fired", (r) => String(r.fired)],
    ["Converted", (r) => String(r.converted)],
    ["Chats started", (r) => String(r.conversations)],
    ["Forms submitted", (r) => String(r.submissions)],
  ], data.triggers, "No trigger fired in this range.", "Trigger funnel by trigger");
  const funnel = funnelCard("Trigger funnel", `Trigger funnel, ${span}`, `trigger-funnel-${data.from}-to-${data.to}`, [
    { label: "Fired", value: t.triggerFired },
    { label: "Chats started", value: t.triggerConversations },
    { label: "Forms submitted", value: t.triggerSubmissions },
  ], triggerTable);
  const questions = table([
    ["Question", (q) => q.question],
    ["Times", (q) => String(q.count)],
    ["Last asked", (q) => when(q.lastAskedAt)],
    ["", (q) => button("Write an answer", () => answerQuestion(ctx, q.question))],
  ], data.unansweredQuestions, "No unanswered question in this range.", "Most frequent unanswered questions");
  return [
    rangeForm(ctx, data),
    cards(data, previous),
    h("div.charts.wide", volume, quality),
    dayTable,
    h("h2", "Trigger funnel"),
    funnel,
    h("h2", "Most frequent unanswered questions"),
    h("p.muted", "Questions the agent found nothing for, grouped by their words. Write an answer and visitors asking them get it."),
    questions,
  ];
}

/** A form tool's funnel, its rates and how often each field was filled in (by its label). */
function formCard(f, tools) {
  const tool = tools.find((x) => x.id === f.toolId);
  const fields = (tool && tool.formSchema && tool.formSchema.fields) || [];
  const labelOf = (name) => (fields.find((x) => x.name === name) || {}).label || words(name);
  const rates = Object.entries(f.fieldCompletionRates || {});
  return funnelCard(words(f.toolName), `Form funnel of ${words(f.toolName)}`, `form-funnel-${f.toolName}`, [
    { label: "Shown", value: f.impressions },
    { label: "Started", value: f.started },
    { label: "Submitted", value: f.submitted },
    { label: "Delivered", value: f.successful },
    { label: "Failed", value: f.failed },
  ], [
    h("p.muted", `Conversion ${pct(f.conversionRate)} (submitted / shown) · completion ${pct(f.completionRate)} (submitted / started)`),
    rates.length ? table([["Field", (r) => labelOf(r[0])], ["Completed", (r) => pct(r[1])]], rates) : null,
  ]);
}

/** The triggers' fired and converted counts, with a table and the conversion rate. */
function triggersCard(groups) {
  const rate = (g) => (g.values[0] ? pct((g.values[1] / g.values[0]) * 100) : "—");
  return chartCard({
    heading: "Fired and converted",
    draw: (width) => groupedBars(groups, ["Fired", "Converted"], { title: "Trigger fired and converted counts" }, width),
    csv: () => ({ file: "triggers", header: ["Trigger", "Fired", "Converted"], rows: groups.map((g) => [g.label, ...g.values]) }),
    extra: table([["Trigger", (g) => g.label], ["Fired", (g) => String(g.values[0])], ["Converted", (g) => String(g.values[1])],
      ["Rate", rate]], groups),
  });
}

/** The period before the one shown, as long (null when it cannot be read). */
async function previousOf(agent, data) {
  try {
    const to = shift(data.from, -1);
    return await get(`/agents/${enc(agent.id)}/analytics${qs({ from: shift(to, 1 - data.days.length), to })}`);
  } catch {
    return null;
  }
}

/** The agent's activity, handoffs, form funnels and trigger performance. */
export async function renderAnalytics(ctx, page) {
  const agent = ctx.agent;
  const [data, forms, triggers, stats, handoff, tools] = await Promise.all([
    get(`/agents/${enc(agent.id)}/analytics${qs({ from: range.from, to: range.to })}`),
    get(`/form-submissions/analytics${qs({ agentId: agent.id })}`),
    get(`/triggers${qs({ agentId: agent.id })}`),
    get(`/triggers/stats${qs({ agentId: agent.id })}`),
    get(`/agents/${enc(agent.id)}/handoff-stats`),
    get(`/tools${qs({ agentId: agent.id })}`),
  ]);
  const previous = await previousOf(agent, data);
  const entries = forms.analytics || [];
  const groups = triggers.map((t) => ({ label: t.name, values: [(stats[t.id] || {}).firedCount || 0, (stats[t.id] || {}).convertedCount || 0] }));
  mount(page,
    pageHeader(`Analytics of ${agent.name}`, "Conversations and answers per day against the days before, unanswered questions, the trigger funnel, handoffs and form funnels."),
    h("h2", "Conversations and answers"),
    activity(ctx, data, previous),
    h("h2", "Handoffs"),
    h("section.card", { "aria-label": "Handoff figures" },
      h("dl.figures",
        h("dt", "Handoff rate"), h("dd", `${pct(handoff.handoffRate * 100)} (${handoff.handoffs} of ${handoff.conversations} conversations)`),
        h("dt", "Median first human reply"), h("dd", handoff.medianFirstReplySeconds === null ? "—" : duration(handoff.medianFirstReplySeconds)))),
    h("h2", "Forms"),
    entries.length ? h("div.charts", entries.map((f) => formCard(f, tools))) : h("p.empty", "No form tools yet."),
    h("h2", "Triggers"),
    groups.length ? triggersCard(groups) : h("p.empty", "No triggers yet."));
}
