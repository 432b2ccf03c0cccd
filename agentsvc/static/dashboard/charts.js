// Inline SVG charts drawn here (no library): a horizontal funnel, grouped bars, lines over days,
// and the frame that shows them.
// Each is drawn for the width it is shown at (its frame, below, redraws it when that changes), so
// one SVG unit is one CSS pixel: its text keeps the size app.css gives it (12-13 px), and every
// label is measured and laid out inside the drawing, never cut at its edge. Each returns the
// SVG and its marks: the boxes a pointer or the arrow keys pick, with the lines of a tooltip.

import { button, download, h } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
const LABEL = 13; // px: .chart text in app.css
const AXIS = 12; // px: .chart text.axis and .value
const SWATCH = 12;

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = String(text);
  return el;
}

let pen = null;

/** The width in px of a text at a font size, in the page's font. */
export function measure(text, size = LABEL) {
  if (!pen) pen = document.createElement("canvas").getContext("2d");
  pen.font = `${size}px ${getComputedStyle(document.body).fontFamily}`;
  return Math.ceil(pen.measureText(String(text)).width);
}

/** The text, shortened with an ellipsis until it fits in `room` px. */
function fit(text, room, size = LABEL) {
  let out = String(text);
  if (measure(out, size) <= room) return out;
  while (out.length > 1 && measure(out + "…", size) > room) out = out.slice(0, -1);
  return out + "…";
}

/** A day as people read it ("Nov 3"), in the browser's language; the day is a UTC date. */
export function dayLabel(iso, withYear = false) {
  const options = { month: "short", day: "numeric", timeZone: "UTC" };
  if (withYear) options.year = "numeric";
  return new Date(`${iso}T00:00:00Z`).toLocaleDateString(undefined, options);
}

function svgFor(width, height, title, kind, description) {
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title, class: `chart ${kind}` });
  svg.append(s("title", {}, title));
  if (description) svg.append(s("desc", {}, description));
  return svg;
}

/** A legend in rows that wrap within the width; returns its height. */
function legend(svg, names, width, left) {
  let x = left;
  let y = 4;
  names.forEach((name, i) => {
    const w = SWATCH + 6 + measure(name);
    if (x > left && x + w > width - 4) {
      x = left;
      y += 20;
    }
    svg.append(s("rect", { x, y: y + 2, width: SWATCH, height: SWATCH, class: `bar series${i} key` }));
    svg.append(s("text", { x: x + SWATCH + 6, y: y + 13, class: "label" }, fit(name, width - x - SWATCH - 10)));
    x += w + 18;
  });
  return y + 20;
}

/** Ticks: a step so that `ticks` steps reach past the peak; whole numbers, unless `whole`
 *  is false and the peak is small (amounts of money): then a step of 1, 2 or 5 x 10^k. */
function scale(peak, ticks = 4, whole = true) {
  if (whole || peak >= ticks) {
    const step = Math.max(1, Math.ceil(Math.max(1, peak) / ticks));
    return { step, max: step * ticks, ticks };
  }
  if (!(peak > 0)) return { step: 0.25, max: 1, ticks }; // nothing spent: 0 to 1
  const raw = Math.max(peak, 1e-6) / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw);
  return { step, max: step * ticks, ticks };
}

function grid(svg, sc, y, x1, x2) {
  for (let i = 0; i <= sc.ticks; i++) {
    const value = Number((sc.step * i).toPrecision(6));
    svg.append(s("line", { x1, x2, y1: y(value), y2: y(value), class: "grid" }));
    const label = value.toLocaleString(undefined, { maximumSignificantDigits: 6 }); // never 5e-7
    svg.append(s("text", { x: x1 - 6, y: y(value) + 4, "text-anchor": "end", class: "axis" }, label));
  }
}

/** A funnel: one horizontal bar per step [{label, value}], widths relative to the largest. */
export function funnelChart(steps, { title = "Funnel" } = {}, width = 520) {
  const rowH = 34;
  const labelW = Math.min(Math.max(...steps.map((st) => measure(st.label)), 40), Math.floor(width * 0.4));
  const valueW = Math.max(...steps.map((st) => measure(st.value, AXIS)), 10) + 10;
  const left = labelW + 10;
  const barW = Math.max(20, width - left - valueW - 4);
  const height = steps.length * rowH + 10;
  const max = Math.max(1, ...steps.map((st) => st.value));
  const first = steps.length ? steps[0] : null;
  const svg = svgFor(width, height, title, "funnel");
  const marks = steps.map((step, i) => {
    const y = 5 + i * rowH;
    svg.append(s("text", { x: left - 8, y: y + rowH / 2 + 4, "text-anchor": "end", class: "label" }, fit(step.label, labelW)));
    svg.append(s("rect", { x: left, y: y + 4, width: barW, height: rowH - 10, rx: 4, class: "track" }));
    const bar = s("rect", { x: left, y: y + 4, width: Math.max(2, (step.value / max) * barW), height: rowH - 10, rx: 4, class: `bar step${i}` });
    svg.append(bar);
    svg.append(s("text", { x: left + barW + 6, y: y + rowH / 2 + 4, class: "value" }, step.value));
    const share = i && first.value ? ` (${((100 * step.value) / first.value).toFixed(1)} % of ${first.label.toLowerCase()})` : "";
    return { box: { x: 0, y, w: width, h: rowH }, el: bar, lines: [step.label, `${step.value}${share}`] };
  });
  return { svg, marks };
}

/** Grouped vertical bars: groups [{label, values: [a, b]}] with series names and a legend.
 *  Narrower than 64 px a group, the drawing is wider than its place (the frame scrolls). */
export function groupedBars(groups, series, { title = "Chart" } = {}, width = 560) {
  const sc = scale(Math.max(0, ...groups.flatMap((g) => g.values)));
  const left = measure(sc.max, AXIS) + 12;
  width = Math.max(width, left + 10 + groups.length * 64);
  const svg = svgFor(width, 0, title, "bars");
  const top = legend(svg, series, width, left) + 18; // room for the values above the bars
  const plotH = 160;
  const height = top + plotH + 30;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", height);
  const y = (v) => top + plotH - (plotH * v) / sc.max;
  grid(svg, sc, y, left, width - 10);
  const groupW = (width - left - 10) / Math.max(1, groups.length);
  const barW = Math.min(28, (groupW - 16) / series.length);
  const marks = [];
  groups.forEach((g, gi) => {
    const x0 = left + gi * groupW + (groupW - barW * series.length) / 2;
    g.values.forEach((v, si) => {
      const x = x0 + si * barW;
      const bar = s("rect", { x, y: y(v), width: barW - 3, height: Math.max(top + plotH - y(v), 1), class: `bar series${si}` });
      svg.append(bar);
      svg.append(s("text", { x: x + (barW - 3) / 2, y: y(v) - 4, "text-anchor": "middle", class: "value" }, v));
      marks.push({ box: { x, y: top, w: barW, h: plotH + 4 }, el: bar, lines: [g.label, `${series[si]}: ${v}`] });
    });
    svg.append(s("text", { x: left + gi * groupW + groupW / 2, y: top + plotH + 20, "text-anchor": "middle", class: "label" }, fit(g.label, groupW - 8)));
  });
  return { svg, marks };
}

/** A line per series over days: days [{date, ...}], series [{key, label}]; a whole-number axis
 *  (unless `whole` is false: amounts), a point per day, as many dates under the axis as fit
 *  without touching, a legend. */
export function timeSeries(days, series, { title = "Chart", description = "", whole = true } = {}, width = 560) {
  const sc = scale(Math.max(0, ...days.flatMap((d) => series.map((sr) => d[sr.key] || 0))), 4, whole);
  const dates = days.map((d) => dayLabel(d.date));
  const dateW = Math.max(...dates.map((t) => measure(t, AXIS)), 10);
  const left = Math.max(measure(sc.max, AXIS) + 12, Math.ceil(dateW / 2) + 4);
  const right = Math.ceil(dateW / 2) + 4;
  const plotW = Math.max(40, width - left - right);
  const svg = svgFor(width, 0, title, "lines", description);
  const top = legend(svg, series.map((sr) => sr.label), width, 4) + 10;
  const plotH = 170;
  const height = top + plotH + 28;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", height);
  const n = days.length;
  const x = (i) => left + (n > 1 ? (plotW * i) / (n - 1) : plotW / 2);
  const y = (v) => top + plotH - (plotH * v) / sc.max;
  grid(svg, sc, y, left, width - right);
  // Dates counted from the last day (always shown), evenly, as many as fit.
  const fits = Math.max(1, Math.floor(plotW / (dateW + 14)) + 1);
  const every = Math.max(1, Math.ceil((n - 1) / Math.max(1, fits - 1)));
  days.forEach((d, i) => {
    if ((n - 1 - i) % every === 0) svg.append(s("text", { x: x(i), y: top + plotH + 20, "text-anchor": "middle", class: "axis" }, dates[i]));
  });
  const band = n > 1 ? plotW / (n - 1) : plotW;
  const marks = days.map((d, i) => {
    const el = s("rect", { x: x(i) - band / 2, y: top, width: band, height: plotH, class: "band" });
    svg.append(el);
    return { box: { x: x(i) - band / 2, y: top, w: band, h: plotH }, el, lines: [dayLabel(d.date, true), ...series.map((sr) => `${sr.label}: ${d[sr.key] || 0}`)] };
  });
  series.forEach((sr, si) => {
    const points = days.map((d, i) => `${x(i).toFixed(1)},${y(d[sr.key] || 0).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { points, class: `line series${si}` }));
    days.forEach((d, i) => svg.append(s("circle", { cx: x(i), cy: y(d[sr.key] || 0), r: n > 45 ? 2 : 3, class: `dot series${si}` })));
  });
  return { svg, marks };
}

// A chart's frame: it draws the chart for the width it has (again when that changes), shows a
// tooltip for the mark under the pointer or picked with the arrow keys, and downloads the
// chart's figures as CSV, its cells defused against spreadsheet formulas as the server's
// exports are (agentsvc/services/exports/formats.py).

// C0 control characters but tab, line feed and carriage return: dropped from every cell.
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f]/g;
// The signs that start a formula, ASCII and full-width.
const FORMULA_SIGNS = "=+-@\uff1d\uff0b\uff0d\uff20";

/** A cell's text that a spreadsheet shows and never runs (see formats.py's `defuse`). */
export function defuse(text) {
  const clean = String(text).replace(CONTROL, "");
  if (!clean) return clean;
  if (clean[0] === "\t" || clean[0] === "\r") return "'" + clean;
  if (/\s/.test(clean[0]) || FORMULA_SIGNS.includes(clean[0])) {
    const first = clean.trimStart()[0];
    if (first && FORMULA_SIGNS.includes(first)) return "'" + clean;
  }
  return clean;
}

/** One CSV field (RFC 4180): numbers as they are, text defused and quoted when needed. */
function csvField(value) {
  const text = typeof value === "number" ? String(value) : defuse(value ?? "");
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Rows (arrays) under a header as CSV text, every line ending with CRLF. */
export function toCsv(header, rows) {
  return [header, ...rows].map((row) => row.map(csvField).join(",") + "\r\n").join("");
}

function downloadCsv(file, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  download(url, `${file}.csv`);
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * A card with a chart: `draw(width)` returns {svg, marks} (charts.js); `csv()` returns
 * {file, header, rows}; `extra` goes under the chart (a table of its figures).
 */
export function chartCard({ heading, draw, csv, extra = null }) {
  const tip = h("div.chart-tip", { hidden: true, "aria-live": "polite" });
  const box = h("div.chart-box", { tabindex: "0", role: "group" });
  let drawn = draw(560);
  let index = -1;
  let width = 0;
  const show = (i) => {
    drawn.marks.forEach((m, j) => m.el.classList.toggle("on", j === i));
    index = i;
    if (i < 0 || !drawn.marks[i]) {
      tip.hidden = true;
      return;
    }
    const mark = drawn.marks[i];
    tip.replaceChildren(...mark.lines.map((line, j) => h(j ? "span" : "strong", line)));
    tip.hidden = false;
    // Beside the mark, inside the frame.
    const room = box.clientWidth - tip.offsetWidth - 4;
    const x = mark.box.x + mark.box.w / 2 + 12 - box.scrollLeft;
    tip.style.left = `${Math.max(4, Math.min(room, x > room ? x - tip.offsetWidth - 24 : x))}px`;
    tip.style.top = `${Math.max(4, mark.box.y)}px`;
  };
  const place = () => {
    const w = Math.floor(box.clientWidth);
    if (!w || w === width) return;
    width = w;
    drawn.svg.replaceWith((drawn = draw(w)).svg);
    if (index >= 0) show(index);
  };
  box.append(drawn.svg);
  box.setAttribute("aria-label", `${drawn.svg.getAttribute("aria-label")}: the arrow keys go from point to point`);
  // The frame's height follows the drawing: redraw in the next frame, never in the callback.
  new ResizeObserver(() => requestAnimationFrame(place)).observe(box);
  box.addEventListener("pointermove", (e) => {
    const r = drawn.svg.getBoundingClientRect();
    const px = e.clientX - r.left;
    const py = e.clientY - r.top;
    const found = drawn.marks.findIndex((m) => px >= m.box.x && px < m.box.x + m.box.w && py >= m.box.y && py < m.box.y + m.box.h);
    if (found !== index) show(found);
  });
  box.addEventListener("pointerleave", () => show(-1));
  box.addEventListener("blur", () => show(-1));
  box.addEventListener("keydown", (e) => {
    const last = drawn.marks.length - 1;
    // From no mark, forwards starts at the first and backwards at the last.
    const back = index < 0 ? last + 1 : index;
    const moves = { ArrowRight: index + 1, ArrowDown: index + 1, ArrowLeft: back - 1, ArrowUp: back - 1, Home: 0, End: last };
    if (e.key === "Escape") return show(-1);
    if (!(e.key in moves) || last < 0) return;
    e.preventDefault();
    show(Math.max(0, Math.min(last, moves[e.key])));
  });
  const save = button("Download CSV", () => {
    const { file, header, rows } = csv();
    downloadCsv(file, toCsv(header, rows));
  }, { "aria-label": `Download CSV: ${heading}` });
  return h("section.card.chart-card",
    h("div.row.chart-head", h("h3", heading), h("span.spacer"), save),
    h("div.chart-frame", box, tip), extra);
}
