// SPDX-License-Identifier: MIT
// heapkit view: the page's code (inlined by heapkit/view.py). Vanilla JS on canvases;
// the data is the JSON in #hk-data (its long columns base64 typed arrays); nothing is
// fetched. window.heapkitView is the handle the browser tests drive (setCursor, blockAt,
// byCaller, exact).
"use strict";
(function () {
  const app = document.getElementById("app");
  const tip = document.createElement("div");
  tip.id = "tip";
  document.body.append(tip);
  const status = document.createElement("p");
  status.className = "note";
  status.id = "follow-status";
  app.before(status);

const ARRAYS = { i4: Int32Array, u4: Uint32Array, u2: Uint16Array, f8: Float64Array };
// A column view.py wrote as {t: dtype, b: base64 of its little-endian bytes}.
function typed(col) {
  let bytes;
  if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(col.b);
  else {
    const bin = atob(col.b);
    bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  }
  return new ARRAYS[col.t](bytes.buffer, bytes.byteOffset, bytes.byteLength / ARRAYS[col.t].BYTES_PER_ELEMENT);
}

// The whole page for data D; prev: the state (cursor, zoom) of the page it replaces (--follow).
function start(D, prev) {
  app.replaceChildren();
  if (!D.records) {
    app.append("waiting for the first records");
    return { state: prev };
  }
  const N = D.records;
  const B = D.buckets;
  // The ids' columns: every id (dense, the map is exact) or those the snapshots name (D.ids.id).
  const ids = {};
  for (const [k, col] of Object.entries(D.ids)) ids[k] = typed(col);
  const idIndex = ids.id ? new Map(Array.from(ids.id, (id, i) => [id, i])) : null;
  const idx = (id) => idIndex ? idIndex.get(id) : id;
  const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
                  "#ff9da7", "#9c755f", "#bab0ac"];
  const state = { v0: 0, v1: N, cursor: D.peak.record, colorBy: "caller", remainingOnly: true, n: N };
  if (prev) {
    Object.assign(state, prev, { n: N, cursor: Math.min(prev.cursor, N - 1) });
    if (prev.v1 >= prev.n) state.v1 = N; // the whole trace in view stays so as it grows
  }

  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k);
    return e;
  };
  const NUM = new Intl.NumberFormat(); // one formatter: toLocaleString makes one per call
  const fmtB = (b) => b >= 1048576 ? (b / 1048576).toFixed(2) + " MiB" : b >= 1024 ? (b / 1024).toFixed(1) + " KiB" : b + " B";
  const hex = (v) => "0x" + v.toString(16);
  const taskName = (tid) => D.tasks[String(tid)] || ("t" + tid);
  const callerName = (c) => c >= 0 && c < D.callers.length ? D.callers[c] : "(unknown caller)";
  const stampAt = (rec) => {
    if (!B.stamp) return null;
    const b = bucketOf(rec);
    return D.stamp_hz ? (B.stamp[b] / D.stamp_hz).toFixed(6) + " s" : "stamp " + B.stamp[b];
  };
  function bucketOf(rec) {
    let lo = 0, hi = B.start.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (B.start[m] <= rec) lo = m; else hi = m - 1; }
    return lo;
  }

  // ---- layout
  const bar = el("div", { class: "bar" });
  const readout = el("span", { id: "readout" });
  const colorSel = el("select", { id: "colorby" });
  for (const c of ["caller", "task", "size", "age"]) colorSel.append(el("option", { value: c }, c));
  const zoomIn = el("button", {}, "zoom +"), zoomOut = el("button", {}, "zoom −"), reset = el("button", {}, "all");
  bar.append("colour by ", colorSel, zoomIn, zoomOut, reset, readout);
  const legend = el("div", { class: "legend" });
  const tl = el("canvas", { id: "timeline", height: "340" });
  app.append(el("p", { class: "note" },
    `${N.toLocaleString()} records. Wheel: zoom; drag: move the cursor; shift+drag: pan. ` +
    `Timeline: ${B.start.length} buckets (live requested bytes: min and max per bucket; allocator curves: ` +
    `the engine's sample at each bucket's end). Map: ` +
    D.allocators.map((a) => typeof a.between === "string"
      ? `${a.name}: the engine's snapshot at or before the cursor (${a.snapshots.length} snapshots; not exact between them: ${a.between})`
      : `${a.name}: exact at every record (the engine's ${a.snapshots.length} snapshots plus where each block went)`).join("; ") +
    `. At most ${D.bounds.block_budget.toLocaleString()} snapshot blocks per allocator; exact maps up to ` +
    `${D.bounds.exact_budget.toLocaleString()} records x allocators.`),
    bar, tl, legend);
  const mapsDiv = el("div", { class: "maps" });
  app.append(el("h2", {}, "Heap map at the cursor"), mapsDiv);
  const maps = D.allocators.map((a, k) => {
    const cap = el("div", { class: "note" });
    const cv = el("canvas", { id: "map-" + a.name, height: "260" });
    const div = el("div", { class: "map" }, el("b", {}, a.name), " ", cap, cv);
    mapsDiv.append(div);
    const m = { a, k, cv, cap, snap: null, cache: null };
    if (typeof a.between !== "string") {
      m.off = typed(a.between.offset); m.usable = typed(a.between.usable);
      // The arena the walks cover: from the first block to the last one's end.
      const b = a.snapshots.find((s) => !s.truncated && s.blocks.length) || a.snapshots[0];
      m.lo = b && b.blocks.length ? b.blocks[0] : a.control;
      m.hi = b && b.blocks.length ? b.blocks[b.blocks.length - 3] + b.blocks[b.blocks.length - 2] : a.arena;
    }
    return m;
  });

  app.append(el("h2", {}, "Who holds memory"));
  const tables = el("div", { class: "tables" });
  app.append(tables);
  const tCurCaller = table("by-caller", "at the cursor, by caller", ["bytes", "blocks", "caller"]);
  const tCurTask = table("by-task", "at the cursor, by task", ["bytes", "blocks", "task"]);
  const tPeakCaller = table("peak-by-caller", `at the peak (record ${D.peak.record}, ${fmtB(D.peak.bytes)}), by caller`, ["bytes", "blocks", "caller"]);
  const tPeakTask = table("peak-by-task", "at the peak, by task", ["bytes", "blocks", "task"]);
  fill(tPeakCaller, D.at_peak.by_caller.map(([c, b, n]) => [b, n, callerName(c)]));
  fill(tPeakTask, D.at_peak.by_task.map(([t, b, n]) => [b, n, taskName(t)]));
  app.append(el("h2", {}, "Icicle at the cursor: task, then caller (width: live requested bytes)"));
  const ice = el("canvas", { id: "icicle", height: "60", style: "width:100%" });
  app.append(ice);

  app.append(el("h2", {}, "Leaks"));
  const remBox = el("input", { type: "checkbox", id: "remaining" });
  remBox.checked = true;
  app.append(el("div", { class: "bar" }, el("label", {}, remBox, " remaining only"),
    el("span", { class: "note" }, `blocks allocated since ${D.leaks.label} (record ${D.leaks.since}), by caller and task; ` +
      `remaining: still live at the end`)));
  const tLeaks = table("leaks", null, ["allocated", "bytes", "remaining", "bytes", "task", "caller"], app);

  function table(id, title, cols, parent) {
    const t = el("table", { id });
    t.append(el("thead", {}, el("tr", {}, ...cols.map((c) => el("th", {}, c)))), el("tbody"));
    const box = el("div", {}, ...(title ? [el("div", { class: "note" }, title)] : []), t);
    (parent || tables).append(box);
    return t;
  }
  function fill(t, rows) {
    const body = t.tBodies[0];
    body.replaceChildren(...rows.map((r) => el("tr", {}, ...r.map((v) => el("td", {}, typeof v === "number" ? NUM.format(v) : v)))));
  }

  // ---- timeline
  function sizeCanvas(cv) {
    const r = window.devicePixelRatio || 1, w = cv.clientWidth;
    if (cv.width !== Math.round(w * r)) cv.width = Math.round(w * r);
    const hh = Math.round(+cv.getAttribute("height") * r);
    if (cv.height !== hh) cv.height = hh;
    const g = cv.getContext("2d");
    g.setTransform(r, 0, 0, r, 0, 0);
    return [g, w, +cv.getAttribute("height")];
  }
  const strips = [
    { label: "bytes: live requested (band), high-water, footprint", h: 130 },
    { label: "largest free block", h: 60 },
    { label: "free blocks", h: 60 },
    { label: "external fragmentation (1 − largest free / total free)", h: 60 },
  ];
  const xOf = (rec, w) => 50 + (rec - state.v0) / (state.v1 - state.v0) * (w - 60);
  const recOf = (x, w) => Math.round(state.v0 + (x - 50) / (w - 60) * (state.v1 - state.v0));

  // The curves are drawn once per view (zoom, pan, size) into an offscreen canvas; a cursor
  // move only copies it and draws the cursor.
  let curves = null;
  function drawTimeline() {
    const [g0, w] = sizeCanvas(tl);
    const key = [state.v0, state.v1, tl.width].join();
    if (!curves || curves.key !== key) {
      const off = document.createElement("canvas");
      off.width = tl.width; off.height = tl.height;
      const og = off.getContext("2d"), r = tl.width / w;
      og.setTransform(r, 0, 0, r, 0, 0);
      drawCurves(og, w);
      curves = { key, off };
    }
    g0.clearRect(0, 0, w, 340);
    g0.save(); g0.setTransform(1, 0, 0, 1, 0, 0); g0.drawImage(curves.off, 0, 0); g0.restore();
    const cx = xOf(state.cursor, w);
    g0.strokeStyle = "#c00"; g0.lineWidth = 1.5; g0.beginPath(); g0.moveTo(cx, 0); g0.lineTo(cx, 328); g0.stroke(); g0.lineWidth = 1;
  }
  function drawCurves(g, w) {
    let y = 4;
    const ymaxBytes = Math.max(D.peak.bytes, ...D.allocators.map((a) => a.peak_footprint)) || 1;
    strips.forEach((s, k) => {
      g.strokeStyle = "#ddd"; g.strokeRect(50, y, w - 60, s.h);
      g.fillStyle = "#666"; g.font = "11px sans-serif"; g.fillText(s.label, 54, y + 11);
      const top = y, h = s.h;
      const series = (xs, ys, ymax, color) => {
        g.strokeStyle = color; g.beginPath();
        let first = true;
        for (let i = 0; i < xs.length; i++) {
          if (xs[i] < state.v0 - 1 || (i > 0 && xs[i - 1] > state.v1)) continue;
          const px = xOf(xs[i], w), py = top + h - ys[i] / ymax * (h - 14);
          if (first) { g.moveTo(px, py); first = false; } else g.lineTo(px, py);
        }
        g.stroke();
      };
      if (k === 0) {
        g.fillStyle = "rgba(90,90,90,0.35)";
        for (let i = 0; i < B.start.length; i++) {
          const r0 = B.start[i], r1 = i + 1 < B.start.length ? B.start[i + 1] : N;
          if (r1 < state.v0 || r0 > state.v1) continue;
          const x0 = xOf(r0, w), x1 = Math.max(xOf(r1, w), x0 + 1);
          const y0 = top + h - B.live_max[i] / ymaxBytes * (h - 14), y1 = top + h - B.live_min[i] / ymaxBytes * (h - 14);
          g.fillRect(x0, y0, x1 - x0, Math.max(1, y1 - y0));
        }
        const hw = top + h - D.peak.bytes / ymaxBytes * (h - 14);
        g.strokeStyle = "#000"; g.setLineDash([4, 3]); g.beginPath(); g.moveTo(50, hw); g.lineTo(w - 10, hw); g.stroke(); g.setLineDash([]);
        g.fillStyle = "#000"; g.fillText("high-water " + fmtB(D.peak.bytes), w - 160, hw - 2);
        g.fillText(fmtB(ymaxBytes), 2, top + 14);
        D.allocators.forEach((a, j) => series(a.series.record, a.series.footprint, ymaxBytes, COLORS[j]));
      } else {
        const key = ["", "largest_free", "free_blocks", "frag"][k];
        const ymax = Math.max(1e-9, ...D.allocators.map((a) => Math.max(...a.series[key])));
        g.fillStyle = "#000"; g.fillText(k === 3 ? "1" : k === 1 ? fmtB(ymax) : String(ymax), 2, top + 14);
        D.allocators.forEach((a, j) => series(a.series.record, a.series[key], ymax, COLORS[j]));
      }
      // Failed allocations: a red line at the first, a red tick on each bucket where more failed.
      g.strokeStyle = "#d00";
      D.allocators.forEach((a) => {
        const s = a.series;
        g.beginPath();
        for (let i = 0; i < s.record.length; i++) {
          const more = s.failures[i] > (i ? s.failures[i - 1] : 0);
          if (!more || s.record[i] < state.v0 || s.record[i] > state.v1) continue;
          const fx = xOf(s.record[i], w); g.moveTo(fx, top + h - 6); g.lineTo(fx, top + h);
        }
        if (a.first_failure != null && a.first_failure >= state.v0 && a.first_failure <= state.v1) {
          const fx = xOf(a.first_failure, w); g.moveTo(fx, top); g.lineTo(fx, top + h);
        }
        g.stroke();
      });
      y += s.h + 4;
    });
    g.fillStyle = "#444"; g.fillText(String(Math.round(state.v0)), 50, 338); g.fillText(String(Math.round(state.v1)), w - 60, 338);
  }
  legend.replaceChildren(el("span", {}, el("i", { style: "background:rgba(90,90,90,.5);height:8px" }), "live requested"),
    ...D.allocators.map((a, j) => el("span", {}, el("i", { style: "background:" + COLORS[j] }),
      `${a.name} (peak footprint ${fmtB(a.peak_footprint)}; failures ${a.failures}` +
      (a.first_failure != null ? `, the first at record ${a.first_failure} (red line; red ticks: buckets with more)` : "") + ")")));

  // ---- the map
  function snapshotOf(a, rec) {
    const s = a.snapshots;
    let lo = -1, hi = s.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (s[m].record <= rec) lo = m; else hi = m - 1; }
    return lo >= 0 ? s[lo] : null;
  }
  // Ids live just after record rec (the same for every allocator; its failures are unplaced).
  let liveCache = null;
  function liveAt(rec) {
    if (liveCache && liveCache.rec === rec) return liveCache.ids;
    const P = ids.pos, E = ids.end, out = [];
    for (let i = 0; i < P.length && P[i] <= rec; i++) if (E[i] > rec) out.push(i);
    liveCache = { rec, ids: out };
    return out;
  }
  // The heap just after record rec, as a snapshot is ([offset, size, owner] triples in
  // address order, owner -1 free). Used blocks: the ids live there, at their extents. Free
  // space: the rest, cut as the latest snapshot's free blocks where unchanged; a free piece that
  // was not free at the snapshot merges with its free neighbours, as a coalescing allocator does.
  function exactMap(m, rec) {
    const { head, tail } = m.a.between;
    const used = liveAt(rec).filter((i) => m.off[i] >= 0);
    const start = new Float64Array(used.length);
    used.forEach((i, j) => { start[j] = m.off[i] - head; });
    const order = Array.from(used.keys()).sort((x, y) => start[x] - start[y]);
    const snap = snapshotOf(m.a, rec);
    const sb = snap ? snap.blocks : [];
    const out = [], fresh = [];
    let j = 0;
    const piece = (a, b, isNew) => {
      const n = out.length;
      if (n && out[n - 1] === -1 && (isNew || fresh[fresh.length - 1]) && out[n - 3] + out[n - 2] === a) {
        out[n - 2] += b - a; fresh[fresh.length - 1] = isNew;
      } else { out.push(a, b - a, -1); fresh.push(isNew); }
    };
    const free = (a, b) => {
      while (a < b) {
        while (j < sb.length && (sb[j + 2] !== -1 || sb[j] + sb[j + 1] <= a)) j += 3;
        if (j < sb.length && sb[j] <= a) { const e = Math.min(b, sb[j] + sb[j + 1]); piece(a, e, false); a = e; }
        else { const e = j < sb.length ? Math.min(b, sb[j]) : b; piece(a, e, true); a = e; }
      }
    };
    let x = m.lo;
    for (const k of order) {
      const i = used[k], s = start[k], e = m.off[i] + m.usable[i] + tail;
      if (s > x) free(x, s);
      out.push(s, e - s, i); fresh.push(false);
      x = Math.max(x, e);
    }
    if (x < m.hi) free(x, m.hi);
    return { record: rec, blocks: out, exact: true, base: snap ? snap.record : null, used: used.length };
  }
  // The map the page shows at rec: exact, or the latest snapshot at or before it.
  function mapAt(m, rec) {
    if (typeof m.a.between === "string") return snapshotOf(m.a, rec);
    if (!m.cache || m.cache.record !== rec) m.cache = exactMap(m, rec);
    return m.cache;
  }
  function blockInfo(snap, i) {
    const b = snap.blocks, off = b[3 * i], size = b[3 * i + 1], owner = b[3 * i + 2];
    const info = { offset: off, size, used: owner !== -1, owner: owner >= 0 ? owner : null };
    if (owner >= 0) {
      const k = idx(owner);
      info.request = ids.size[k]; info.birth = ids.birth[k];
      info.caller = callerName(ids.caller[k]); info.callerIdx = ids.caller[k];
      info.task = taskName(ids.tid[k]); info.tid = ids.tid[k];
      info.age = state.cursor - info.birth;
    }
    return info;
  }
  // The map spans the arena up to the highest live block end ever (the free rest is not drawn).
  const mapSpan = (a) => Math.max(1, Math.ceil(a.peak_end * 1.02));
  function colorOf(info, maxAge) {
    if (!info.used) return "#e8e8e8";
    if (info.owner == null) return "#999";
    if (state.colorBy === "caller") return COLORS[info.callerIdx % COLORS.length];
    if (state.colorBy === "task") return COLORS[info.tid % COLORS.length];
    if (state.colorBy === "size") return `hsl(${Math.min(240, Math.log2(info.request + 1) * 12)},65%,50%)`;
    return `hsl(${240 - Math.min(240, 240 * info.age / Math.max(1, maxAge))},65%,50%)`;
  }
  const ROW = 12;
  function drawMap(m) {
    const [g, w, h] = sizeCanvas(m.cv);
    g.clearRect(0, 0, w, h);
    const snap = mapAt(m, state.cursor);
    m.snap = snap;
    m.span = mapSpan(m.a);
    const rows = Math.floor(h / ROW), per = Math.max(1, Math.ceil(m.span / (rows * w)));
    m.per = per; m.w = w;
    if (!snap) { m.cap.textContent = "before the first snapshot"; return; }
    m.cap.textContent = (snap.exact
      ? `record ${snap.record}, exact: ${snap.used} used blocks at their extents, owner and used/free of every byte; ` +
        (snap.base == null ? "free blocks: the free runs (no walk yet)"
          : `free blocks as the walk at record ${snap.base} cut them where unchanged, freed space merged with free neighbours`)
      : `record ${snap.record}${snap.record !== state.cursor ? " (latest snapshot at or before the cursor: not the cursor's heap)" : ""}; ` +
        `${snap.blocks.length / 3} blocks shown of ${snap.walked} walked${snap.merged ? ", runs merged" : ""}` +
        `${snap.truncated ? ", highest dropped" : ""}`) + `; ${fmtB(per)} per pixel, ${fmtB(per * w)} per row`;
    const b = snap.blocks, nb = b.length / 3;
    for (let i = 0; i < nb; i++) {
      let p0 = Math.floor(b[3 * i] / per);
      const p1 = Math.min(rows * w, Math.max(p0 + 1, Math.floor((b[3 * i] + b[3 * i + 1]) / per)));
      // A block within one pixel that the next block's pixel covers would be painted over.
      if (p1 === p0 + 1 && i + 1 < nb && Math.floor(b[3 * i + 3] / per) === p0) continue;
      g.fillStyle = colorOf(blockInfo(snap, i), state.cursor);
      while (p0 < p1) {
        const row = Math.floor(p0 / w), x0 = p0 % w, x1 = Math.min(w, x0 + (p1 - p0));
        // A pixel's gap after each block that is wide enough, so that neighbours stay apart.
        g.fillRect(x0, row * ROW, x1 - x0 - (p0 + x1 - x0 === p1 && x1 - x0 > 3 ? 1 : 0), ROW - 2);
        p0 += x1 - x0;
      }
    }
  }
  function blockAt(name, offset) {
    const m = maps.find((mm) => mm.a.name === name);
    const snap = mapAt(m, state.cursor);
    if (!snap) return null;
    const b = snap.blocks;
    let lo = 0, hi = b.length / 3 - 1;
    while (lo < hi) { const k = (lo + hi + 1) >> 1; if (b[3 * k] <= offset) lo = k; else hi = k - 1; }
    if (hi < 0 || b[3 * lo] > offset || offset >= b[3 * lo] + b[3 * lo + 1]) return null;
    return Object.assign({ record: snap.record }, blockInfo(snap, lo));
  }
  maps.forEach((m) => {
    m.cv.addEventListener("mousemove", (ev) => {
      const r = m.cv.getBoundingClientRect();
      const x = Math.floor(ev.clientX - r.left), row = Math.floor((ev.clientY - r.top) / ROW);
      const info = m.per ? blockAt(m.a.name, (row * m.w + x) * m.per) : null;
      if (!info) { tip.style.display = "none"; return; }
      tip.textContent = `${m.a.name} at record ${info.record}\naddress ${hex(info.offset)} (arena offset)\n` +
        `${info.used ? "used" : "free"} block of ${info.size} B (granted)` +
        (info.owner != null ? `\nrequest ${info.request} B, id ${info.owner}\ncaller ${info.caller}\ntask ${info.task}\nage ${info.age} records` : "");
      tip.style.left = ev.clientX + 12 + "px"; tip.style.top = ev.clientY + 12 + "px"; tip.style.display = "block";
    });
    m.cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  });

  // ---- who holds memory at the cursor (the first allocator's map)
  function holders() {
    const m = maps[0];
    const snap = m && mapAt(m, state.cursor);
    const byC = new Map(), byT = new Map(), tree = new Map();
    if (snap) {
      for (let i = 0; i < snap.blocks.length / 3; i++) {
        const o = snap.blocks[3 * i + 2];
        if (o < 0) continue;
        const k = idx(o), c = ids.caller[k], t = ids.tid[k], s = ids.size[k];
        let v = byC.get(c);
        if (!v) byC.set(c, v = [0, 0]);
        v[0] += s; v[1]++;
        if (!(v = byT.get(t))) byT.set(t, v = [0, 0]);
        v[0] += s; v[1]++;
        let tt = tree.get(t);
        if (!tt) tree.set(t, tt = new Map());
        tt.set(c, (tt.get(c) || 0) + s);
      }
    }
    const sorted = (map) => [...map.entries()].sort((x, y) => y[1][0] - x[1][0] || y[1][1] - x[1][1] || x[0] - y[0]).slice(0, D.bounds.top);
    return { byCaller: sorted(byC), byTask: sorted(byT), tree };
  }
  function drawHolders() {
    const h = holders();
    fill(tCurCaller, h.byCaller.map(([c, [b, n]]) => [b, n, callerName(c)]));
    fill(tCurTask, h.byTask.map(([t, [b, n]]) => [b, n, taskName(t)]));
    const [g, w] = sizeCanvas(ice);
    g.clearRect(0, 0, w, 60);
    let total = 0;
    for (const tt of h.tree.values()) for (const v of tt.values()) total += v;
    let x = 0;
    g.font = "11px sans-serif";
    for (const [t, tt] of [...h.tree.entries()].sort((p, q) => q[0] - p[0])) {
      let tb = 0; for (const v of tt.values()) tb += v;
      const tw = tb / Math.max(total, 1) * w;
      g.fillStyle = COLORS[t % COLORS.length]; g.fillRect(x, 0, tw - 1, 28);
      g.fillStyle = "#fff"; if (tw > 40) g.fillText(taskName(t), x + 3, 18);
      let cx = x;
      for (const [c, v] of [...tt.entries()].sort((p, q) => q[1] - p[1])) {
        const cw = v / Math.max(total, 1) * w;
        g.fillStyle = COLORS[c % COLORS.length]; g.globalAlpha = 0.7; g.fillRect(cx, 30, cw - 1, 28); g.globalAlpha = 1;
        g.fillStyle = "#000"; if (cw > 60) g.fillText(callerName(c).slice(0, Math.floor(cw / 6)), cx + 3, 48);
        cx += cw;
      }
      x += tw;
    }
  }
  function drawLeaks() {
    const rows = D.leaks.rows.filter((r) => !state.remainingOnly || r[4] > 0);
    fill(tLeaks, rows.map(([c, t, n, b, rn, rb]) => [n, b, rn, rb, taskName(t), callerName(c)]));
  }

  function redraw() {
    drawTimeline();
    maps.forEach(drawMap);
    drawHolders();
    const st = stampAt(state.cursor);
    readout.textContent = `cursor: record ${state.cursor}${st ? " (" + st + ")" : ""}`;
  }
  function setCursor(rec) {
    state.cursor = Math.max(0, Math.min(N - 1, rec));
    redraw();
  }
  function zoom(f, at) {
    const span = state.v1 - state.v0, ns = Math.min(N, Math.max(10, span * f));
    const c = at != null ? at : (state.v0 + state.v1) / 2, t = (c - state.v0) / span;
    state.v0 = Math.max(0, c - t * ns); state.v1 = Math.min(N, state.v0 + ns); state.v0 = Math.max(0, state.v1 - ns);
    drawTimeline();
  }
  let drag = null;
  tl.addEventListener("mousedown", (ev) => {
    const r = tl.getBoundingClientRect(), w = tl.clientWidth;
    drag = { pan: ev.shiftKey, x: ev.clientX, v0: state.v0, v1: state.v1 };
    if (!drag.pan) setCursor(recOf(ev.clientX - r.left, w));
  });
  window.onmousemove = (ev) => {
    if (!drag) return;
    const r = tl.getBoundingClientRect(), w = tl.clientWidth;
    if (drag.pan) {
      const d = (ev.clientX - drag.x) / (w - 60) * (drag.v1 - drag.v0);
      const span = drag.v1 - drag.v0;
      state.v0 = Math.max(0, Math.min(N - span, drag.v0 - d)); state.v1 = state.v0 + span;
      drawTimeline();
    } else setCursor(recOf(ev.clientX - r.left, w));
  };
  window.onmouseup = () => { drag = null; };
  tl.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = tl.getBoundingClientRect();
    zoom(ev.deltaY < 0 ? 0.8 : 1.25, recOf(ev.clientX - r.left, tl.clientWidth));
  }, { passive: false });
  zoomIn.onclick = () => zoom(0.5, state.cursor);
  zoomOut.onclick = () => zoom(2, state.cursor);
  reset.onclick = () => { state.v0 = 0; state.v1 = N; drawTimeline(); };
  colorSel.value = state.colorBy;
  remBox.checked = state.remainingOnly;
  colorSel.onchange = () => { state.colorBy = colorSel.value; maps.forEach(drawMap); };
  remBox.onchange = () => { state.remainingOnly = remBox.checked; drawLeaks(); };
  window.onresize = redraw;

  drawLeaks();
  redraw();
  window.heapkitView = {
    setCursor: (rec) => { const t0 = performance.now(); setCursor(rec); return performance.now() - t0; },
    blockAt,
    byCaller: () => holders().byCaller.map(([c, [b, n]]) => [callerName(c), b, n]),
    snapshotRecords: (name) => maps.find((m) => m.a.name === name).a.snapshots.map((s) => s.record),
    exact: (name) => typeof maps.find((m) => m.a.name === name).a.between !== "string",
    ready: performance.now(),
    records: N,
  };
  return { state };
}

  let cur = start(JSON.parse(document.getElementById("hk-data").textContent), null);
  // --follow: the server that sent the page has the records that arrived since.
  const first = JSON.parse(document.getElementById("hk-data").textContent).follow;
  if (first) {
    let version = first.version;
    const poll = () => fetch("/data", { cache: "no-store" }).then((r) => r.json()).then((d) => {
      if (d.follow.version !== version) { version = d.follow.version; cur = start(d, cur.state); }
      status.textContent = d.follow.done ? `the firmware ended: ${d.records || 0} records`
        : `following the firmware: ${d.records || 0} records so far`;
      if (!d.follow.done) setTimeout(poll, d.follow.poll_ms);
    }).catch(() => { status.textContent = "the server stopped"; });
    poll();
  }
})();
