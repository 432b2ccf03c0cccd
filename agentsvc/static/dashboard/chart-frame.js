// A chart's frame: it draws the chart for the width it has (again when that changes), shows a
// tooltip for the mark under the pointer or picked with the arrow keys, and downloads the
// chart's figures as CSV, its cells defused against spreadsheet formulas as the server's
// exports are (agentsvc/services/exports/formats.py).

import { h } from "./dom.js";

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
  const a = h("a", { href: url, download: `${file}.csv`, class: "offscreen" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * A card with a chart: `draw(width)` returns {svg, marks} (charts.js); `csv()` returns
 * {file, header, rows}; `extra` goes under the chart (a table of its figures).
 */
export function chartCard({ heading, draw, csv, extra = null }) {
  const tip = h("div", { class: "chart-tip", hidden: true, "aria-live": "polite" });
  const box = h("div", { class: "chart-box", tabindex: "0", role: "group" });
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
    tip.replaceChildren(...mark.lines.map((line, j) => h(j ? "span" : "strong", {}, line)));
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
  const download = h("button", {
    type: "button", class: "secondary small", "aria-label": `Download CSV: ${heading}`,
    onclick: () => {
      const { file, header, rows } = csv();
      downloadCsv(file, toCsv(header, rows));
    },
  }, "Download CSV");
  return h("section", { class: "card chart-card" },
    h("div", { class: "row chart-head" }, h("h3", {}, heading), h("span", { class: "spacer" }), download),
    h("div", { class: "chart-frame" }, box, tip), extra);
}
