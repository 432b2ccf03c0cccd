// Analytics: each form tool's funnel and the triggers' fired/converted counts, as SVG charts.

import { get, qs } from "./api.js";
import { h, mount, table } from "./dom.js";
import { funnelChart, groupedBars } from "./charts.js";
import { pageHeader } from "./forms.js";

// Every rate with one decimal (33.3 %, 50.0 %), within 0-100.
const pct = (n) => `${Math.min(100, Math.max(0, Number(n) || 0)).toFixed(1)} %`;

/** Seconds as people read them: 45 s, 3 min 20 s, 2 h 5 min. */
function duration(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Form funnels and trigger performance of the selected agent. */
export async function renderAnalytics(ctx, page) {
  const agent = ctx.agent;
  const [forms, triggers, stats, handoff] = await Promise.all([
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
    pageHeader(`Analytics of ${agent.name}`, "Handoffs, form funnels and trigger performance."),
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
