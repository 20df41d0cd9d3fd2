// podium leaderboard page: vanilla JS, no dependencies, nothing fetched but records.json.
// It draws what the server computed (leaderboard/views/web.py records_document): only rows
// whose signature checked against a trusted key are in `records`; `boards` ranks them
// (leaderboard/ranking.py: median order, shared ranks within the noise, runs of one bundle
// as one entry); `unverified` lists every row that failed, with why. Nothing is ranked here.
// `set_problems` says what is wrong with the store's whole set (its signed head: a row
// missing, one added unlisted, a rollback, a stale head); `withdrawn` lists rows an
// organizer withdrew by a signed withdrawal. Columns sort on a click of their header; each
// row links to its signed record (and its bundle where the store holds it) and has a
// permalink, #record=<record_id>, that opens it.
// Record text comes from participants: it is only ever set with textContent.
"use strict";

const PAGE = 50;
const OTHER_ORDER = ["UNOFFICIAL", "PENDING", "REJECTED", "FAILED"];
const COLORS = { VERIFIED: "#2f855a", UNOFFICIAL: "#b7791f", PENDING: "#718096", REJECTED: "#c53030", FAILED: "#553c9a" };
const state = { doc: null, records: [], byId: new Map(), challenge: null, verdict: "ALL", best: true, team: "", pages: { ranked: 0, others: 0 }, selected: null, points: [], sort: { ranked: { key: "rank", dir: 1 }, others: { key: null, dir: 1 } } };
const $ = (id) => document.getElementById(id);
const T0 = performance.now();

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
function svgEl(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}
const num = (v) => (typeof v === "number" && isFinite(v) ? v : null);
const fmt = (v, d) => (num(v) === null ? "-" : v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }));
const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const keyOf = (r) => String((r.signature || {}).key_id || "");

function board() {
  const b = (state.doc.boards || {})[state.challenge] || { best: [], all: [], others: [] };
  const rows = state.records.filter((r) => (r.challenge || {}).id === state.challenge);
  const ranked = (state.best ? b.best : b.all).map((e, order) => ({ ...e, order, record: state.byId.get(e.runs[0]) })).filter((e) => e.record);
  const others = (b.others || []).map((id) => state.byId.get(id)).filter(Boolean);
  return { rows, ranked, others };
}

// -- sorting: the server's order is the default; a header click sorts by that column --
const RANKED_KEYS = {
  rank: (e) => e.order, team: (e) => String(e.record.team), entry: (e) => String(e.record.entry),
  tps: (e) => e.tps, runs: (e) => e.runs.length, ppl: (e) => (e.record.metrics || {}).ppl,
  cap: (e) => (e.record.metrics || {}).ppl_cap, speedup: (e) => (e.record.metrics || {}).speedup,
  key: (e) => keyOf(e.record), date: (e) => String(e.record.verified_at || ""),
};
const OTHER_KEYS = {
  verdict: (r) => OTHER_ORDER.indexOf(r.verdict), team: (r) => String(r.team), entry: (r) => String(r.entry),
  reason: (r) => String(r.reason || ""), date: (r) => String(r.verified_at || ""),
};
function sorted(list, keys, how) {
  if (!how.key || !keys[how.key]) return list;
  const get = keys[how.key];
  const cmp = (a, b) => {
    const x = get(a), y = get(b);
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * how.dir;
  };
  return list.map((v, i) => [v, i]).sort((a, b) => cmp(a[0], b[0]) || a[1] - b[1]).map((p) => p[0]);
}
function setupSort(tableId, which) {
  for (const th of $(tableId).tHead.querySelectorAll("th[data-sort]")) {
    th.tabIndex = 0;
    const go = () => {
      const how = state.sort[which];
      how.dir = how.key === th.dataset.sort ? -how.dir : th.dataset.sort === "tps" || th.dataset.sort === "speedup" ? -1 : 1;
      how.key = th.dataset.sort;
      state.pages[which] = 0;
      render();
    };
    th.onclick = go;
    th.onkeydown = (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); go(); } };
  }
}
function markSort(tableId, which) {
  const how = state.sort[which];
  for (const th of $(tableId).tHead.querySelectorAll("th[data-sort]")) {
    if (th.dataset.sort === how.key) th.setAttribute("aria-sort", how.dir > 0 ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
}

// -- links: the signed record, the bundle where the store has it, the row's permalink --
const recordHref = (r) => `records/${encodeURIComponent((r.challenge || {}).id || "")}/${encodeURIComponent(r.record_id)}.json`;
function linksCell(r) {
  const td = el("td", { class: "links" });
  td.append(el("a", { class: "record-link", href: recordHref(r), title: "the signed record, as stored" }, "record"));
  const bundle = (state.doc.bundles || {})[r.bundle_sha256];
  if (bundle) td.append(el("a", { class: "bundle-link", href: bundle, title: "the submitted bundle" }, "bundle"));
  const a = el("a", { class: "permalink", href: `#record=${encodeURIComponent(r.record_id)}`, title: "a link to this row" }, "#");
  a.onclick = (ev) => ev.stopPropagation();
  td.append(a);
  return td;
}

function matchesTeam(r) {
  return !state.team || String(r.team).toLowerCase().includes(state.team.toLowerCase());
}

function pager(id, key, total) {
  const nav = $(id);
  nav.replaceChildren();
  const pages = Math.max(1, Math.ceil(total / PAGE));
  state.pages[key] = Math.min(state.pages[key], pages - 1);
  if (pages <= 1) return;
  const prev = el("button", { type: "button" }, "‹ prev");
  const next = el("button", { type: "button" }, "next ›");
  prev.disabled = state.pages[key] === 0;
  next.disabled = state.pages[key] >= pages - 1;
  prev.onclick = () => { state.pages[key]--; render(); };
  next.onclick = () => { state.pages[key]++; render(); };
  nav.append(prev, el("span", {}, `page ${state.pages[key] + 1} of ${pages} (${total} rows)`), next);
}

function selectRow(record, entry) {
  state.selected = record ? record.record_id : null;
  renderDetails(record, entry);
  document.querySelectorAll("tbody tr").forEach((tr) =>
    tr.classList.toggle("selected", tr.dataset.recordId === state.selected));
  drawSelection();
}

function tpsCell(tps, ci) {
  const td = el("td", { class: "num tps" }, fmt(tps, 1));
  if (ci) td.append(el("span", { class: "ci" }, ci));  // may wrap under the median
  return td;
}

function renderRanked(ranked) {
  const tbody = $("ranked").tBodies[0];
  const visible = sorted(ranked.filter((x) => matchesTeam(x.record)), RANKED_KEYS, state.sort.ranked);
  markSort("ranked", "ranked");
  pager("ranked-pager", "ranked", visible.length);
  const start = state.pages.ranked * PAGE;
  const frag = document.createDocumentFragment();
  for (const e of visible.slice(start, start + PAGE)) {
    const r = e.record, m = r.metrics || {};
    const single = e.runs.length === 1 && Array.isArray(m.tps_ci95);
    const ci = single ? ` [${fmt(m.tps_ci95[0], 1)}, ${fmt(m.tps_ci95[1], 1)}]` : "";
    const runs = e.runs.length === 1 ? "1" : `${e.runs.length} (spread ${fmt(100 * e.spread, 1)}%)`;
    const tr = el("tr", { "data-record-id": r.record_id, "data-rank": e.rank, "data-tied": e.tied ? "1" : "0", "data-runs": e.runs.length, class: "ranked-row" + (e.tied ? " tied" : "") });
    const rank = el("td", { class: "num rank", title: e.tied ? "shares this rank: cannot be told apart from another entry within the noise" : "" }, (e.tied ? "=" : "") + e.rank);
    tr.append(rank, el("td", { class: "team" }, r.team), el("td", {}, r.entry),
      tpsCell(e.tps, ci), el("td", { class: "num runs" }, runs),
      el("td", { class: "num" }, fmt(m.ppl, 3)), el("td", { class: "num" }, fmt(m.ppl_cap, 3)),
      el("td", { class: "num" }, num(m.speedup) === null ? "-" : fmt(m.speedup, 2) + "x"),
      el("td", { class: "key", "data-key": state.doc.checked ? keyOf(r) : "", title: state.doc.checked ? `signed by trusted key ${keyOf(r)}` : "not checked (--no-verify)" },
        state.doc.checked ? keyOf(r).slice(0, 8) + "…" : "unchecked"),
      el("td", { class: "date" }, String(r.verified_at || "").slice(0, 10)), linksCell(r));
    tr.onclick = () => selectRow(r, e);
    frag.append(tr);
  }
  tbody.replaceChildren(frag);
}

function renderUnverified() {
  const bad = (state.doc.unverified || []).filter((b) => b.challenge === state.challenge || !b.challenge);
  $("unverified-section").hidden = bad.length === 0;
  const tbody = $("unverified").tBodies[0];
  const frag = document.createDocumentFragment();
  for (const b of bad) {
    const tr = el("tr", { class: "unverified-row", "data-kind": b.kind, "data-path": b.path });
    tr.append(el("td", { class: "kind" }, b.kind), el("td", { class: "team" }, b.team || "?"),
      el("td", {}, b.entry || "?"), el("td", { class: "reason" }, b.problem), el("td", { class: "path" }, b.path));
    frag.append(tr);
  }
  tbody.replaceChildren(frag);
}

function renderSet() {
  const problems = state.doc.set_problems || [];
  $("set-warnings").hidden = problems.length === 0;
  const ul = $("set-problems");
  ul.replaceChildren(...problems.map((p) => el("li", { class: "set-problem", "data-kind": p.kind, "data-path": p.path || "" }, p.message)));
}

function renderWithdrawn() {
  const gone = (state.doc.withdrawn || []).filter((w) => w.challenge === state.challenge);
  $("withdrawn-section").hidden = gone.length === 0;
  const frag = document.createDocumentFragment();
  for (const w of gone) {
    const tr = el("tr", { class: "withdrawn-row", "data-record-id": w.record_id });
    const td = el("td", { class: "links" });
    td.append(el("a", { class: "record-link", href: w.path }, "record"),
      el("a", { class: "withdrawal-link", href: `withdrawals/${encodeURIComponent(w.challenge)}/${encodeURIComponent(w.record_id)}.json` }, "withdrawal"));
    tr.append(el("td", { class: "team" }, w.team), el("td", {}, w.entry), el("td", { class: "reason" }, w.reason),
      el("td", { class: "date" }, String(w.withdrawn_at || "").slice(0, 10)), td);
    frag.append(tr);
  }
  $("withdrawn").tBodies[0].replaceChildren(frag);
}

// -- permalinks: #record=<id> opens that row: its challenge, its page, its details --
function openPermalink() {
  const m = /^#record=([0-9a-f]+)$/.exec(location.hash);
  if (!m || !state.doc) return;
  const r = state.byId.get(m[1]);
  if (!r) { $("status").textContent = `no checked row ${m[1]} on this board`; return; }
  state.challenge = (r.challenge || {}).id; $("challenge").value = state.challenge;
  state.team = ""; $("team").value = ""; state.verdict = "ALL"; $("verdict").value = "ALL";
  const b = (state.doc.boards || {})[state.challenge] || { best: [], all: [] };
  let entry = null, which = "ranked";
  const find = (l) => (l || []).findIndex((e) => e.runs.includes(r.record_id));
  if (state.best && find(b.best) < 0 && find(b.all) >= 0) { state.best = false; $("best").checked = false; }
  const { ranked, others } = board();
  let index = sorted(ranked, RANKED_KEYS, state.sort.ranked).findIndex((e) => e.runs.includes(r.record_id));
  if (index >= 0) entry = sorted(ranked, RANKED_KEYS, state.sort.ranked)[index];
  else { which = "others"; index = sorted(others, OTHER_KEYS, state.sort.others).findIndex((x) => x.record_id === r.record_id); }
  if (index >= 0) state.pages[which] = Math.floor(index / PAGE);
  render();
  selectRow(r, entry);
  document.querySelectorAll("tr.permalinked").forEach((tr) => tr.classList.remove("permalinked"));
  const tr = document.querySelector(`tbody tr[data-record-id="${r.record_id}"]`);
  if (tr) { tr.classList.add("permalinked"); tr.scrollIntoView({ block: "center" }); }
  document.body.dataset.permalink = r.record_id;
}

function renderOthers(others) {
  const tbody = $("others").tBodies[0];
  const visible = sorted(others.filter((r) => matchesTeam(r) && (state.verdict === "ALL" || r.verdict === state.verdict)), OTHER_KEYS, state.sort.others);
  markSort("others", "others");
  pager("others-pager", "others", visible.length);
  const start = state.pages.others * PAGE;
  const frag = document.createDocumentFragment();
  for (const r of visible.slice(start, start + PAGE)) {
    const tr = el("tr", { "data-record-id": r.record_id, class: "other-row" });
    const badge = el("td", {});
    badge.append(el("span", { class: `badge ${r.verdict}` }, r.verdict));
    tr.append(badge, el("td", { class: "team" }, r.team), el("td", {}, r.entry),
      el("td", { class: "reason" }, r.reason || "-"), el("td", { class: "date" }, String(r.verified_at || "").slice(0, 10)), linksCell(r));
    tr.onclick = () => selectRow(r);
    frag.append(tr);
  }
  tbody.replaceChildren(frag);
}

function renderDetails(r, entry) {
  const box = $("details");
  box.replaceChildren(el("h2", {}, "Details"));
  if (!r) { box.append(el("p", { class: "muted" }, "Click a row or a point.")); return; }
  const m = r.metrics || {}, hw = r.hardware || {}, eng = r.engine || {};
  const dl = el("dl");
  const add = (k, v) => dl.append(el("dt", {}, k), el("dd", {}, v === null || v === undefined || v === "" ? "-" : v));
  add("team / entry", `${r.team} / ${r.entry}`);
  add("verdict", r.verdict + (r.mode === "self-check" ? " (self-check)" : ""));
  add("reason", r.reason);
  add("TPS", `${fmt(m.tps, 2)}${Array.isArray(m.tps_ci95) ? ` (95% CI ${fmt(m.tps_ci95[0], 2)} – ${fmt(m.tps_ci95[1], 2)})` : ""}, cv ${fmt(m.tps_cv, 3)}`);
  add("reported TPS", fmt(m.reported_tps, 2));
  add("PPL / cap", `${fmt(m.ppl, 4)} / ${fmt(m.ppl_cap, 4)}`);
  add("speed-up", num(m.speedup) === null ? "-" : `${fmt(m.speedup, 2)}x over ${fmt(m.baseline_tps, 1)} TPS`);
  add("hardware", hw.summary);
  add("engine", eng.kind);
  add("fingerprint", r.fingerprint_sha256);
  add("image", r.image_id);
  add("bundle", r.bundle_sha256);
  add("challenge", `${(r.challenge || {}).id} ${(r.challenge || {}).version}`);
  add("verified at", r.verified_at);
  add("podium", r.toolkit_version);
  add("record / report", `${r.record_id} / ${r.report_id}`);
  add("signed by key", state.doc.checked ? keyOf(r) + " (checked)" : keyOf(r) + " (NOT checked: --no-verify)");
  if (entry) {
    add("rank", `${entry.tied ? "=" : ""}${entry.rank}: interval ${fmt(entry.interval[0], 1)} – ${fmt(entry.interval[1], 1)} TPS after widening by ${fmt(100 * entry.noise, 1)}%`);
    if (entry.runs.length > 1) {
      add("runs", entry.runs.map((id) => { const x = state.byId.get(id) || {}; return `${fmt((x.metrics || {}).tps, 1)} (${String(x.verified_at || "").slice(0, 10)})`; }).join(", ") + `; spread ${fmt(100 * entry.spread, 1)}%`);
    }
  }
  box.append(dl, el("h2", {}, "Engine config"), el("pre", {}, JSON.stringify(eng.config || {}, null, 2)));
  box.append(el("h2", {}, `Findings (${(r.findings || []).length})`));
  const ul = el("ul");
  for (const f of r.findings || []) ul.append(el("li", {}, `${f.severity} [${f.check_id}] ${f.message}`));
  box.append(ul);
}

// -- scatter: one <path> per verdict keeps 10,000 points to a handful of DOM nodes --
const W = 560, H = 380, PAD = { l: 56, r: 14, t: 14, b: 40 };
let scale = null;

function ticks(lo, hi, n) {
  const step = Math.pow(10, Math.floor(Math.log10((hi - lo) / n || 1)));
  const mult = [1, 2, 5, 10].find((k) => (hi - lo) / (step * k) <= n) || 10;
  const s = step * mult, out = [];
  for (let v = Math.ceil(lo / s) * s; v <= hi + 1e-9; v += s) out.push(+v.toFixed(10));
  return out;
}

function renderScatter(rows) {
  const svg = $("scatter");
  svg.replaceChildren();
  const pts = rows.filter((r) => matchesTeam(r) && (state.verdict === "ALL" || r.verdict === state.verdict) &&
    num((r.metrics || {}).tps) !== null && num((r.metrics || {}).ppl) !== null);
  state.points = pts;
  const caps = rows.map((r) => num((r.metrics || {}).ppl_cap)).filter((v) => v !== null);
  const cap = caps.length ? caps.sort((a, b) => a - b)[Math.floor(caps.length / 2)] : null;
  if (!pts.length) {
    svg.append(Object.assign(svgEl("text", { x: W / 2 - 60, y: H / 2 }), { textContent: "no points to plot" }));
    scale = null; $("legend").replaceChildren(); return;
  }
  let x0 = Math.min(...pts.map((r) => r.metrics.ppl), cap ?? Infinity), x1 = Math.max(...pts.map((r) => r.metrics.ppl), cap ?? -Infinity);
  let y0 = 0, y1 = Math.max(...pts.map((r) => r.metrics.tps));
  const dx = (x1 - x0) * 0.08 || 0.05; x0 -= dx; x1 += dx; y1 = y1 * 1.08 || 1;
  const sx = (v) => PAD.l + (v - x0) / (x1 - x0) * (W - PAD.l - PAD.r);
  const sy = (v) => H - PAD.b - (v - y0) / (y1 - y0) * (H - PAD.t - PAD.b);
  scale = { sx, sy };
  for (const t of ticks(x0, x1, 6)) {
    svg.append(svgEl("line", { class: "grid", x1: sx(t), x2: sx(t), y1: PAD.t, y2: H - PAD.b }));
    svg.append(Object.assign(svgEl("text", { x: sx(t) - 12, y: H - PAD.b + 14 }), { textContent: t.toFixed(2) }));
  }
  for (const t of ticks(y0, y1, 6)) {
    svg.append(svgEl("line", { class: "grid", x1: PAD.l, x2: W - PAD.r, y1: sy(t), y2: sy(t) }));
    svg.append(Object.assign(svgEl("text", { x: 4, y: sy(t) + 4 }), { textContent: t.toLocaleString("en-US") }));
  }
  svg.append(svgEl("line", { class: "axis", x1: PAD.l, x2: W - PAD.r, y1: H - PAD.b, y2: H - PAD.b }));
  svg.append(svgEl("line", { class: "axis", x1: PAD.l, x2: PAD.l, y1: PAD.t, y2: H - PAD.b }));
  svg.append(Object.assign(svgEl("text", { x: W / 2 - 50, y: H - 6 }), { textContent: "PPL (lower is better)" }));
  svg.append(Object.assign(svgEl("text", { x: PAD.l + 4, y: PAD.t + 10 }), { textContent: "TPS" }));
  if (cap !== null) {
    svg.append(svgEl("line", { class: "cap", id: "cap-line", x1: sx(cap), x2: sx(cap), y1: PAD.t, y2: H - PAD.b }));
    svg.append(Object.assign(svgEl("text", { x: sx(cap) - 58, y: H - PAD.b - 8 }), { textContent: `cap ${cap}` }));
  }
  // Pareto front of VERIFIED points: no other point has lower PPL and higher TPS.
  const front = [];
  let best = -Infinity;
  for (const r of pts.filter((p) => p.verdict === "VERIFIED").sort((a, b) => a.metrics.ppl - b.metrics.ppl || b.metrics.tps - a.metrics.tps)) {
    if (r.metrics.tps > best) { front.push(r); best = r.metrics.tps; }
  }
  if (front.length) {
    let d = `M${sx(front[0].metrics.ppl).toFixed(1)},${sy(front[0].metrics.tps).toFixed(1)}`;
    for (const r of front.slice(1)) d += `H${sx(r.metrics.ppl).toFixed(1)}V${sy(r.metrics.tps).toFixed(1)}`;
    svg.append(svgEl("path", { class: "pareto", id: "pareto", d, "data-points": front.length }));
  }
  const legend = $("legend");
  legend.replaceChildren();
  for (const verdict of ["VERIFIED", ...OTHER_ORDER]) {
    const mine = pts.filter((r) => r.verdict === verdict);
    if (!mine.length) continue;
    const d = mine.map((r) => `M${sx(r.metrics.ppl).toFixed(1)},${sy(r.metrics.tps).toFixed(1)}h0`).join("");
    svg.append(svgEl("path", { class: "pts", d, stroke: COLORS[verdict], "data-verdict": verdict, "data-count": mine.length }));
    const item = el("span", {}, `● ${verdict} (${mine.length})`);
    item.style.color = COLORS[verdict];
    legend.append(item);
  }
  legend.append(el("span", {}, "— Pareto front   ┆ PPL cap"));
  drawSelection();
}

function drawSelection() {
  const svg = $("scatter");
  const old = document.getElementById("sel-ring");
  if (old) old.remove();
  const r = state.points.find((p) => p.record_id === state.selected);
  if (!r || !scale) return;
  svg.append(svgEl("circle", { id: "sel-ring", class: "sel", cx: scale.sx(r.metrics.ppl), cy: scale.sy(r.metrics.tps), r: 8 }));
}

function onScatterClick(ev) {
  if (!scale || !state.points.length) return;
  const svg = $("scatter"), box = svg.getBoundingClientRect();
  const x = (ev.clientX - box.left) * W / box.width, y = (ev.clientY - box.top) * H / box.height;
  let best = null, bestD = Infinity;
  for (const r of state.points) {
    const d = (scale.sx(r.metrics.ppl) - x) ** 2 + (scale.sy(r.metrics.tps) - y) ** 2;
    if (d < bestD) { bestD = d; best = r; }
  }
  if (best && bestD < 400) selectRow(best);
}

function render() {
  const { rows, ranked, others } = board();
  const showRanked = state.verdict === "ALL" || state.verdict === "VERIFIED";
  const showOthers = state.verdict !== "VERIFIED";
  $("ranked-section").hidden = !showRanked;
  $("others-section").hidden = !showOthers;
  renderRanked(showRanked ? ranked : []);
  renderOthers(showOthers ? others : []);
  renderUnverified();
  renderWithdrawn();
  renderSet();
  renderScatter(rows);
  const bad = (state.doc.unverified || []).length;
  $("status").textContent = state.challenge
    ? `${state.records.length} records, ${ranked.length} ranked in ${state.challenge}` + (bad ? `, ${bad} unverified` : "")
    : "no records in this store yet" + (bad ? `; ${bad} unverified` : "");
  document.body.dataset.ready = "1";
  document.body.dataset.renderMs = String(Math.round(performance.now() - T0));
}

function renderTrust(doc) {
  const box = $("trust");
  box.classList.toggle("unchecked", !doc.checked);
  box.classList.toggle("set-failed", doc.checked && (doc.set_problems || []).length > 0);
  box.dataset.checked = doc.checked ? "1" : "0";
  box.textContent = doc.checked
    ? `${doc.summary}. Check them yourself with podium leaderboard verify --store STORE --pubkey KEY.`
    : doc.summary;
}

function setup(doc) {
  state.doc = doc;
  state.records = doc.records || [];
  state.byId = new Map(state.records.map((r) => [r.record_id, r]));
  renderTrust(doc);
  const counts = new Map();
  for (const r of state.records) counts.set((r.challenge || {}).id, (counts.get((r.challenge || {}).id) || 0) + 1);
  for (const b of doc.unverified || []) if (b.challenge && !counts.has(b.challenge)) counts.set(b.challenge, 0);
  const ids = [...counts.keys()].sort();
  const sel = $("challenge");
  sel.replaceChildren(...ids.map((id) => el("option", { value: id }, `${id} (${counts.get(id)})`)));
  const wanted = new URLSearchParams(location.search).get("challenge");
  state.challenge = ids.includes(wanted) ? wanted : ids.sort((a, b) => counts.get(b) - counts.get(a) || cmpStr(a, b))[0] || null;
  sel.value = state.challenge || "";
  const reset = () => { state.pages.ranked = 0; state.pages.others = 0; render(); };
  sel.onchange = () => { state.challenge = sel.value; reset(); };
  $("verdict").onchange = (e) => { state.verdict = e.target.value; reset(); };
  $("best").onchange = (e) => { state.best = e.target.checked; reset(); };
  $("team").oninput = (e) => { state.team = e.target.value; reset(); };
  $("scatter").addEventListener("click", onScatterClick);
  setupSort("ranked", "ranked");
  setupSort("others", "others");
  window.addEventListener("hashchange", openPermalink);
  render();
  openPermalink();
}

fetch("records.json", { cache: "no-store" })
  .then((r) => { if (!r.ok) throw new Error(`records.json: HTTP ${r.status}`); return r.json(); })
  .then((doc) => setup(doc))
  .catch((err) => { $("status").textContent = `could not load records: ${err.message}`; document.body.dataset.ready = "error"; });
