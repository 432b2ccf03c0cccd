// Inline SVG charts drawn here (no library): a horizontal funnel, grouped bars, lines over days.

const NS = "http://www.w3.org/2000/svg";

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = String(text);
  return el;
}

/** A funnel: one horizontal bar per step [{label, value}], widths relative to the largest. */
export function funnelChart(steps, { title = "Funnel" } = {}) {
  const rowH = 34;
  const labelW = 110;
  const width = 520;
  const barW = width - labelW - 70;
  const height = steps.length * rowH + 10;
  const max = Math.max(1, ...steps.map((st) => st.value));
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title, class: "chart funnel" });
  svg.append(s("title", {}, title));
  steps.forEach((step, i) => {
    const y = 5 + i * rowH;
    const w = Math.max(2, (step.value / max) * barW);
    svg.append(s("text", { x: labelW - 8, y: y + rowH / 2 + 4, "text-anchor": "end", class: "label" }, step.label));
    svg.append(s("rect", { x: labelW, y: y + 4, width: barW, height: rowH - 10, rx: 4, class: "track" }));
    svg.append(s("rect", { x: labelW, y: y + 4, width: w, height: rowH - 10, rx: 4, class: `bar step${i}` }));
    svg.append(s("text", { x: labelW + barW + 8, y: y + rowH / 2 + 4, class: "value" }, step.value));
  });
  return svg;
}

/** Grouped vertical bars: groups [{label, values: [a, b]}] with series names and a legend. */
export function groupedBars(groups, series, { title = "Chart" } = {}) {
  const width = Math.max(560, groups.length * 90 + 60);
  const height = 240;
  const top = 30;
  const bottom = 50;
  const left = 40;
  const plotH = height - top - bottom;
  const ticks = 4;
  // Whole-number ticks: the axis top is the smallest multiple of 4 steps above the data.
  const step = Math.max(1, Math.ceil(Math.max(1, ...groups.flatMap((g) => g.values)) / ticks));
  const max = step * ticks;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title, class: "chart bars" });
  svg.append(s("title", {}, title));
  for (let i = 0; i <= ticks; i++) {
    const value = step * i;
    const y = top + plotH - (plotH * i) / ticks;
    svg.append(s("line", { x1: left, x2: width - 10, y1: y, y2: y, class: "grid" }));
    svg.append(s("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "axis" }, value));
  }
  const groupW = (width - left - 10) / Math.max(1, groups.length);
  const barW = Math.min(28, (groupW - 16) / series.length);
  groups.forEach((g, gi) => {
    const x0 = left + gi * groupW + (groupW - barW * series.length) / 2;
    g.values.forEach((v, si) => {
      const hgt = (v / max) * plotH;
      const x = x0 + si * barW;
      const bar = s("rect", { x, y: top + plotH - hgt, width: barW - 3, height: Math.max(hgt, 1), class: `bar series${si}` });
      bar.append(s("title", {}, `${g.label}: ${series[si]} ${v}`));
      svg.append(bar);
      svg.append(s("text", { x: x + (barW - 3) / 2, y: top + plotH - hgt - 4, "text-anchor": "middle", class: "value" }, v));
    });
    const room = Math.max(6, Math.floor(groupW / 7));
    const label = g.label.length > room ? g.label.slice(0, room - 1) + "…" : g.label;
    svg.append(s("text", { x: left + gi * groupW + groupW / 2, y: top + plotH + 18, "text-anchor": "middle", class: "label" }, label));
  });
  series.forEach((name, si) => {
    const x = left + si * 110;
    svg.append(s("rect", { x, y: 6, width: 12, height: 12, class: `bar series${si}` }));
    svg.append(s("text", { x: x + 18, y: 16, class: "label" }, name));
  });
  return svg;
}

/** A line per series over days: days [{date, ...}], series [{key, label}]; whole-number axis,
 *  a point per day (its value in its tooltip), dates under the axis, a legend. */
export function timeSeries(days, series, { title = "Chart", description = "" } = {}) {
  const width = Math.max(560, Math.min(1100, days.length * 28 + 80));
  const height = 240;
  const top = 30;
  const bottom = 40;
  const left = 44;
  const right = 12;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const ticks = 4;
  const peak = Math.max(1, ...days.flatMap((d) => series.map((sr) => d[sr.key] || 0)));
  const step = Math.max(1, Math.ceil(peak / ticks));
  const max = step * ticks;
  const x = (i) => left + (days.length > 1 ? (plotW * i) / (days.length - 1) : plotW / 2);
  const y = (v) => top + plotH - (plotH * v) / max;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title, class: "chart lines" });
  svg.append(s("title", {}, title));
  if (description) svg.append(s("desc", {}, description));
  for (let i = 0; i <= ticks; i++) {
    const value = step * i;
    svg.append(s("line", { x1: left, x2: width - right, y1: y(value), y2: y(value), class: "grid" }));
    svg.append(s("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end", class: "axis" }, value));
  }
  // About six date labels, whatever the range.
  const every = Math.max(1, Math.ceil(days.length / 6));
  days.forEach((d, i) => {
    if (i % every === 0 || i === days.length - 1) {
      svg.append(s("text", { x: x(i), y: height - bottom + 18, "text-anchor": "middle", class: "axis" }, d.date.slice(5)));
    }
  });
  series.forEach((sr, si) => {
    const points = days.map((d, i) => `${x(i).toFixed(1)},${y(d[sr.key] || 0).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { points, class: `line series${si}` }));
    days.forEach((d, i) => {
      const dot = s("circle", { cx: x(i), cy: y(d[sr.key] || 0), r: 2.5, class: `dot series${si}` });
      dot.append(s("title", {}, `${d.date}: ${sr.label} ${d[sr.key] || 0}`));
      svg.append(dot);
    });
    const lx = left + si * 150;
    svg.append(s("rect", { x: lx, y: 6, width: 12, height: 12, class: `bar series${si}` }));
    svg.append(s("text", { x: lx + 18, y: 16, class: "label" }, sr.label));
  });
  return svg;
}
