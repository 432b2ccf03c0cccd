// Analytics: the agent's days (conversations, answers and their quality, the trigger funnel,
// unanswered questions) over a range of days; handoffs; each form's funnel; the triggers'
// fired/converted counts. Charts are SVG drawn by the page, each with a table of its figures.

import { get, qs } from "./api.js";
import { field, h, mount, table, when } from "./dom.js";
import { funnelChart, groupedBars, timeSeries } from "./charts.js";
import { pageHeader } from "./forms.js";
import { answerQuestion } from "./page-review.js";

// The range shown (empty: the API's default, the last 30 days).
const range = { from: "", to: "" };

// Every rate with one decimal (33.3 %, 50.0 %), within 0-100.
const pct = (n) => `${Math.min(100, Math.max(0, Number(n) || 0)).toFixed(1)} %`;

/** Seconds as people read them: 45 s, 3 min 20 s, 2 h 5 min. */
function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The figures of a chart as a table, behind a disclosure (for screen readers and copying). */
function figuresTable(caption, columns, rows) {
  return h("details", { class: "figures-table" },
    h("summary", {}, `${caption}: the figures as a table`),
    table(columns, rows, "No figures.", caption));
}

const DAY_COLUMNS = [
  ["conversations", "Conversations"], ["visitorMessages", "Visitor messages"], ["answers", "Answers"],
  ["answersRatedUp", "👍"], ["answersRatedDown", "👎"], ["unanswered", "Unanswered"],
  ["triggerFired", "Triggers fired"], ["triggerConversations", "Chats from triggers"], ["triggerSubmissions", "Forms from triggers"],
];

/** The range form, the totals, the daily charts, the trigger funnel and the unanswered questions. */
function activity(ctx, data) {
  const form = h("form", { class: "row range-form", "aria-label": "Range of days", onsubmit: (e) => {
    e.preventDefault();
    const values = new FormData(form);
    range.from = String(values.get("from") || "");
    range.to = String(values.get("to") || "");
    ctx.navigate("#/analytics");
  } },
  field("From", h("input", { name: "from", type: "date", value: range.from || data.from })),
  field("To", h("input", { name: "to", type: "date", value: range.to || data.to })),
  h("button", { type: "submit" }, "Show"));
  const t = data.totals;
  const days = data.days;
  const span = `${data.from} to ${data.to}`;
  const volume = timeSeries(days, [
    { key: "conversations", label: "Conversations" },
    { key: "visitorMessages", label: "Visitor messages" },
    { key: "answers", label: "Answers" },
  ], { title: `Conversations, visitor messages and answers per day, ${span}`, description: `${t.conversations} conversations, ${t.visitorMessages} visitor messages, ${t.answers} answers in all.` });
  const quality = timeSeries(days, [
    { key: "answersRatedUp", label: "Rated 👍" },
    { key: "answersRatedDown", label: "Rated 👎" },
    { key: "unanswered", label: "Unanswered" },
  ], { title: `Answer quality per day, ${span}`, description: `${t.answersRatedUp} rated up, ${t.answersRatedDown} rated down, ${t.unanswered} unanswered.` });
  const dayTable = figuresTable("Figures per day", [
    { label: "Day", cell: (d) => d.date },
    ...DAY_COLUMNS.map(([key, label]) => ({ label, cell: (d) => String(d[key]) })),
  ], days);
  const funnel = funnelChart([
    { label: "Fired", value: t.triggerFired },
    { label: "Chats started", value: t.triggerConversations },
    { label: "Forms submitted", value: t.triggerSubmissions },
  ], { title: `Trigger funnel, ${span}` });
  const triggerTable = table([
    { label: "Trigger", cell: (r) => r.name || "(deleted trigger)" },
    { label: "Fired", cell: (r) => String(r.fired) },
    { label: "Converted", cell: (r) => String(r.converted) },
    { label: "Chats started", cell: (r) => String(r.conversations) },
    { label: "Forms submitted", cell: (r) => String(r.submissions) },
  ], data.triggers, "No trigger fired in this range.", "Trigger funnel by trigger");
  const questions = table([
    { label: "Question", cell: (q) => q.question },
    { label: "Times", cell: (q) => String(q.count) },
    { label: "Last asked", cell: (q) => when(q.lastAskedAt) },
    { label: "", cell: (q) => h("button", { type: "button", class: "secondary small", onclick: () => answerQuestion(ctx, q.question) }, "Write an answer") },
  ], data.unansweredQuestions, "No unanswered question in this range.", "Most frequent unanswered questions");
  return [
    form,
    h("section", { class: "card", "aria-label": "Totals" },
      h("dl", { class: "figures" },
        h("dt", {}, "Conversations"), h("dd", {}, String(t.conversations)),
        h("dt", {}, "Visitor messages"), h("dd", {}, String(t.visitorMessages)),
        h("dt", {}, "Answers"), h("dd", {}, `${t.answers} (👍 ${t.answersRatedUp} · 👎 ${t.answersRatedDown})`),
        h("dt", {}, "Unanswered"), h("dd", {}, `${t.unanswered} (${pct(t.unansweredRate)} of answers)`))),
    h("div", { class: "charts wide" },
      h("section", { class: "card chart-card" }, h("h3", {}, "Activity"), volume),
      h("section", { class: "card chart-card" }, h("h3", {}, "Answer quality"), quality)),
    dayTable,
    h("h2", {}, "Trigger funnel"),
    h("section", { class: "card chart-card" }, funnel, triggerTable),
    h("h2", {}, "Most frequent unanswered questions"),
    h("p", { class: "muted" }, "Questions the agent found nothing for, grouped by their words. Write an answer and visitors asking them get it."),
    questions,
  ];
}

/** The agent's activity, handoffs, form funnels and trigger performance. */
export async function renderAnalytics(ctx, page) {
  const agent = ctx.agent;
  const [data, forms, triggers, stats, handoff] = await Promise.all([
    get(`/agents/${encodeURIComponent(agent.id)}/analytics${qs({ from: range.from, to: range.to })}`),
    get(`/form-submissions/analytics${qs({ agentId: agent.id })}`),
    get(`/triggers${qs({ agentId: agent.id })}`),
    get(`/triggers/stats${qs({ agentId: agent.id })}`),
    get(`/agents/${encodeURIComponent(agent.id)}/handoff-stats`),
  ]);
  const entries = forms.analytics || [];
  const formSections = entries.map((f) => h("section", { class: "card chart-card" },
    h("h3", {}, f.toolName),
    funnelChart([
      { label: "Impressions", value: f.impressions },
      { label: "Started", value: f.started },
      { label: "Submitted", value: f.submitted },
      { label: "Successful", value: f.successful },
      { label: "Failed", value: f.failed },
    ], { title: `Form funnel of ${f.toolName}` }),
    h("p", { class: "muted" }, `Conversion ${pct(f.conversionRate)} (submitted / impressions) · completion ${pct(f.completionRate)} (submitted / started)`),
    Object.keys(f.fieldCompletionRates || {}).length
      ? table([{ label: "Field", cell: (r) => r[0] }, { label: "Completed", cell: (r) => pct(r[1]) }], Object.entries(f.fieldCompletionRates))
      : null));
  const groups = triggers.map((t) => ({ label: t.name, values: [(stats[t.id] || {}).firedCount || 0, (stats[t.id] || {}).convertedCount || 0] }));
  mount(page,
    pageHeader(`Analytics of ${agent.name}`, "Conversations and answers per day, unanswered questions, the trigger funnel, handoffs and form funnels."),
    h("h2", {}, "Conversations and answers"),
    activity(ctx, data),
    h("h2", {}, "Handoffs"),
    h("section", { class: "card", "aria-label": "Handoff figures" },
      h("dl", { class: "figures" },
        h("dt", {}, "Handoff rate"), h("dd", {}, `${pct(handoff.handoffRate * 100)} (${handoff.handoffs} of ${handoff.conversations} conversations)`),
        h("dt", {}, "Median first human reply"), h("dd", {}, handoff.medianFirstReplySeconds === null ? "—" : duration(handoff.medianFirstReplySeconds)))),
    h("h2", {}, "Forms"),
    entries.length ? h("div", { class: "charts" }, formSections) : h("p", { class: "empty" }, "No form tools yet."),
    h("h2", {}, "Triggers"),
    groups.length
      ? h("section", { class: "card chart-card" }, groupedBars(groups, ["Fired", "Converted"], { title: "Trigger fired and converted counts" }),
          table([{ label: "Trigger", cell: (g) => g.label }, { label: "Fired", cell: (g) => String(g.values[0]) }, { label: "Converted", cell: (g) => String(g.values[1]) },
            { label: "Rate", cell: (g) => (g.values[0] ? pct((g.values[1] / g.values[0]) * 100) : "—") }], groups))
      : h("p", { class: "empty" }, "No triggers yet."));
}
