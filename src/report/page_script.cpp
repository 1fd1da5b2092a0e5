// The report page's script: draws the embedded model (report/model.h) with DOM calls. Strings
// of the model reach the page only through textContent and setAttribute, never as markup. A
// section that throws is reported in #lathe-errors (the tests read it) and the others still draw.
#include "report/html.h"

namespace lathe::report {

const char* const page_error_hook = R"JS(
window.latheErrors = [];
window.latheError = function (msg) {
  window.latheErrors.push(String(msg));
  var box = document.getElementById('lathe-errors');
  if (!box) return;
  box.hidden = false;
  box.setAttribute('data-count', String(window.latheErrors.length));
  var p = document.createElement('p');
  p.className = 'error';
  p.textContent = String(msg);
  box.appendChild(p);
};
window.addEventListener('error', function (e) {
  window.latheError('script error: ' + (e.message || e) + (e.lineno ? ' (line ' + e.lineno + ')' : ''));
});
window.addEventListener('unhandledrejection', function (e) { window.latheError('unhandled rejection: ' + e.reason); });
)JS";

const char* const page_script = R"JS(
(function () {
'use strict';
var NS = 'http://www.w3.org/2000/svg';  // the SVG namespace name (an identifier, never fetched)
var data = JSON.parse(document.getElementById('lathe-report-data').textContent);
var root = document.getElementById('report');

function put(e, attrs, kids) {
  if (attrs) Object.keys(attrs).forEach(function (k) {
    var v = attrs[k];
    if (v === null || v === undefined || v === false) return;
    if (k === 'text') e.textContent = String(v); else e.setAttribute(k, String(v));
  });
  (kids || []).forEach(function add(c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(add); return; }
    e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  });
  return e;
}
function el(tag, attrs) { return put(document.createElement(tag), attrs, Array.prototype.slice.call(arguments, 2)); }
function sv(tag, attrs) { return put(document.createElementNS(NS, tag), attrs, Array.prototype.slice.call(arguments, 2)); }
function num(x) { return typeof x === 'number' && isFinite(x); }
function ratio(x) { return num(x) ? x.toFixed(3) + '\u00d7' : '\u2013'; }
function secs(s) {
  if (!num(s)) return '\u2013';
  if (s < 1e-3) return (s * 1e6).toFixed(1) + ' \u00b5s';
  if (s < 1) return (s * 1e3).toFixed(3) + ' ms';
  return s.toFixed(3) + ' s';
}
function pct(x) { return num(x) ? (100 * x).toFixed(1) + '%' : '\u2013'; }
function sci(x) { return num(x) ? (x === 0 ? '0' : x.toExponential(2)) : '\u2013'; }
function short(h) { return h ? String(h).slice(0, 10) : ''; }
function clip(s, n) { s = String(s === undefined || s === null ? '' : s); return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; }
function list(xs) { return (xs && xs.length) ? xs.join(', ') : 'none'; }
function section(id, title) {
  var s = el('section', {id: id, 'class': 'block'}, el('h2', {text: title}));
  root.appendChild(s);
  return s;
}
function guard(name, fn) {
  try { fn(); } catch (e) { window.latheError(name + ': ' + (e && e.stack ? e.stack : e)); }
}
function table(head, rows, attrs) {
  return el('table', attrs || {}, el('thead', {}, el('tr', {}, head.map(function (h) { return el('th', {text: h}); }))),
            el('tbody', {}, rows));
}
function td(v, cls) { return el('td', {'class': cls || null}, v); }

var nodesById = {};
guard('graph data', function () {
  ((data.graph && data.graph.nodes) || []).forEach(function (n) { nodesById[n.id] = n; });
});
function kernelText(h) {
  var n = nodesById[h];
  if (!h) return '\u2013';
  return n ? n.label + (n.name ? ' ' + n.name : '') + ' [' + short(h) + ']' : '[' + short(h) + ']';
}

// ---- header -------------------------------------------------------------------------------
function header() {
  var isCard = data.kind === 'card';
  var nav = el('nav', {}, ['overview', 'lineage', 'progress', 'archive', 'cards', 'evidence', 'evaluations', 'diffs']
    .map(function (id) { return el('a', {href: '#' + id, text: id}); }));
  root.appendChild(nav);
  var s = section('overview', isCard ? 'Skill card' : 'Run');
  if (isCard) {
    s.appendChild(el('h1', {text: 'skill card ' + data.card.name}));
  } else {
    var r = data.run;
    s.appendChild(el('h1', {text: r.kind + ' run ' + r.id}));
    // The verdict first: what the run achieved, its figures, who did the work.
    var v = data.verdict || {};
    var vd = el('div', {'class': 'verdict', id: 'verdict'}, el('p', {'class': 'headline', text: v.headline || 'no verdict'}));
    var vfig = el('dl', {'class': 'meta'});
    [['start', v.start && (v.start.name + ' [' + short(v.start.hash) + ']')],
     ['best', v.best && (v.best.name + ' [' + short(v.best.hash) + ']')], ['times', v.times],
     ['speedup', typeof v.speedup === 'number' ? ratio(v.speedup) + (typeof v.ci_low === 'number' ?
        ' (95% CI [' + v.ci_low.toFixed(3) + ', ' + v.ci_high.toFixed(3) + '])' : '') : null],
     ['evaluation', v.evaluation ? '#' + v.evaluation + ' (' + v.outcome + ')' : null],
     ['by', (v.provenance || '\u2013') + (v.machinery_only ? ' \u2014 machinery results, not a model\u2019s' : '')]]
      .forEach(function (kv) {
        if (kv[1] === undefined || kv[1] === null || kv[1] === '') return;
        vfig.appendChild(el('dt', {text: kv[0]}));
        vfig.appendChild(el('dd', {text: kv[1]}));
      });
    vd.appendChild(vfig);
    s.appendChild(vd);
    var meta = el('dl', {'class': 'meta'});
    [['task', r.task], ['state', r.state + (r.message ? ': ' + r.message : '')], ['created', r.created_at],
     ['updated', r.updated_at], ['proposer', data.provenance && data.provenance.proposer],
     ['events', data.events], ['report', data.schema + ', generated ' + data.generated_at]].forEach(function (kv) {
      meta.appendChild(el('dt', {text: kv[0]}));
      meta.appendChild(el('dd', {text: kv[1] === undefined || kv[1] === null || kv[1] === '' ? '\u2013' : kv[1]}));
    });
    s.appendChild(meta);
    var sum = r.summary || {};
    var figs = el('div', {'class': 'figures', id: 'summary-figures'});
    Object.keys(sum).forEach(function (k) {
      var v = sum[k];
      if (v !== null && typeof v === 'object') return;
      var shown = typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(3) : (v === null ? '\u2013' : String(v));
      figs.appendChild(el('div', {'class': 'figure'}, el('div', {'class': 'v', text: clip(shown, 60), title: String(shown)}),
                          el('div', {'class': 'k', text: k})));
    });
    s.appendChild(figs);
  }
  if (data.provenance && data.provenance.machinery_only)
    s.appendChild(el('div', {'class': 'banner', id: 'provenance-note', text: data.provenance.note}));
  if (data.notes && data.notes.length)
    s.appendChild(el('ul', {'class': 'notes'}, data.notes.map(function (n) { return el('li', {text: n}); })));
}

// ---- the lineage graph --------------------------------------------------------------------
function graph() {
  var g = data.graph || {nodes: [], edges: [], rejected: []};
  var s = section('lineage', data.kind === 'card' ? 'Source lineage' + (g.lineage ? ' ' + g.lineage : '') : 'Lineage');
  if (!g.nodes.length) { s.appendChild(el('p', {'class': 'muted', text: 'No kernels to draw.'})); return; }
  var rejected = (g.rejected || []).filter(function (x) { return nodesById[x.from]; });
  var wrap = el('div', {'class': 'scroll hide-rejected', id: 'graph-wrap'});
  var toggle = el('input', {type: 'checkbox', id: 'show-rejected'});
  toggle.addEventListener('change', function () {
    wrap.classList.toggle('hide-rejected', !toggle.checked);
    var size = toggle.checked ? fullSize : keptSize;
    svg.setAttribute('width', size.width);
    svg.setAttribute('height', size.height);
    rtab.classList.toggle('hide-rejected', !toggle.checked);
  });
  s.appendChild(el('p', {}, el('label', {}, toggle, ' show rejected attempts (' + (g.rejected || []).length + ')'),
                   el('span', {'class': 'muted', text: '  \u2014 dashed edges: mechanical (byte-identical) steps; speedups are paired ratios on the machine that ran them'})));
  // Layers: depth from the roots along the edges (a chain for lineages, a tree for evolve).
  var depth = {}, order = [], incoming = {};
  g.edges.forEach(function (e) { incoming[e.to] = true; });
  g.nodes.forEach(function (n) { if (!incoming[n.id]) depth[n.id] = 0; });
  for (var pass = 0; pass < g.nodes.length; ++pass) {
    var changed = false;
    g.edges.forEach(function (e) {
      if (depth[e.from] === undefined || e.from === e.to) return;
      var d = depth[e.from] + 1;
      if (depth[e.to] === undefined || depth[e.to] < d) { if (d <= g.nodes.length) { depth[e.to] = d; changed = true; } }
    });
    if (!changed) break;
  }
  g.nodes.forEach(function (n) { if (depth[n.id] === undefined) depth[n.id] = 0; });
  var W = 200, H = 80, CW = 330, RH = 104, M = 16;
  var rows = {}, pos = {}, maxRow = 0, maxDepth = 0;
  g.nodes.forEach(function (n) {
    var d = depth[n.id], r = rows[d] || 0;
    rows[d] = r + 1;
    pos[n.id] = {x: M + d * CW, y: M + r * RH};
    maxRow = Math.max(maxRow, r); maxDepth = Math.max(maxDepth, d);
  });
  // The drawing's size without and with the rejected attempts (the toggle switches between them).
  var keptSize = {width: M * 2 + maxDepth * CW + W, height: M * 2 + maxRow * RH + H};
  var rpos = [];
  rejected.forEach(function (x, i) {
    var d = depth[x.from] + 1, r = rows[d] || 0;
    rows[d] = r + 1;
    rpos.push({x: M + d * CW, y: M + r * RH, item: x, i: i});
    maxRow = Math.max(maxRow, r); maxDepth = Math.max(maxDepth, d);
  });
  var fullSize = {width: M * 2 + maxDepth * CW + W, height: M * 2 + maxRow * RH + H};
  var svg = sv('svg', {id: 'lineage-graph', 'class': 'graph', width: keptSize.width, height: keptSize.height});
  svg.appendChild(sv('defs', {}, sv('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7,
                                                markerHeight: 7, orient: 'auto-start-reverse'},
                                        sv('path', {d: 'M0,0 L10,5 L0,10 z', fill: '#57606a'}))));
  function curve(a, b) {
    var x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    if (x2 <= x1) { x1 = a.x + W / 2; y1 = a.y + H; x2 = b.x + W / 2; y2 = b.y; }
    var mx = (x1 + x2) / 2;
    return {d: 'M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2, mx: mx, my: (y1 + y2) / 2};
  }
  g.edges.forEach(function (e) {
    var a = pos[e.from], b = pos[e.to];
    if (!a || !b) return;
    var c = curve(a, b);
    var cls = 'edge' + (e.mechanical ? ' mechanical' : '') + (e.evidence ? ' evidence' : '');
    var full = (e.action || 'step') + (e.locus ? ' @ ' + e.locus : '') + ': ' + ratio(e.speedup) + ' \u2014 ' + (e.provenance || '') +
               (e.forward ? '; forward ' + e.forward : '') + (e.evaluations && e.evaluations.length ? '; evaluations #' + e.evaluations.join(' #') : '');
    svg.appendChild(sv('g', {'class': cls, 'data-from': e.from, 'data-to': e.to},
                       sv('title', {text: full}),
                       sv('path', {d: c.d, 'marker-end': 'url(#arrow)'}),
                       sv('text', {x: c.mx, y: c.my - 14, 'text-anchor': 'middle', text: clip(e.action || 'step', 22)}),
                       sv('text', {x: c.mx, y: c.my, 'text-anchor': 'middle', 'class': 'ratio', text: ratio(e.speedup)}),
                       sv('text', {x: c.mx, y: c.my + 13, 'text-anchor': 'middle', 'class': 'prov', text: clip(e.provenance, 22)})));
  });
  function box(p, cls, kernel, title, lines, tip) {
    var grp = sv('g', {'class': cls, 'data-kernel': kernel, transform: 'translate(' + p.x + ',' + p.y + ')'},
                 sv('title', {text: tip}), sv('rect', {width: W, height: H, rx: 6}),
                 sv('text', {x: 8, y: 17, 'class': 'title', text: clip(title, 30)}));
    lines.forEach(function (t, i) { grp.appendChild(sv('text', {x: 8, y: 35 + i * 15, 'class': 'line', text: clip(t, 34)})); });
    return grp;
  }
  g.nodes.forEach(function (n) {
    var feats = n.features || [];
    var timeLine = 'time ' + secs(n.median_seconds) + (n.time_evaluation ? ' (eval #' + n.time_evaluation + ')' : '');
    var second = num(n.score) ? 'score ' + n.score.toFixed(3) + ', speedup ' + ratio(n.speedup) : n.role;
    var featLine = feats.length ? feats.length + ' feature(s): ' + feats.join(', ') : (num(n.score) ? n.role : 'no features');
    svg.appendChild(box(pos[n.id], 'node ' + String(n.role || '').replace(/[^a-z]+/g, '-'), n.id,
                        n.label + (n.name ? ' ' + n.name : ''), [timeLine, second, featLine],
                        n.label + ' ' + (n.name || '') + ' [' + n.id + ']\nrole: ' + n.role + '\n' + timeLine +
                        '\nfeatures: ' + list(feats)));
  });
  rpos.forEach(function (p) {
    var x = p.item, a = pos[x.from];
    var c = curve(a, p);
    svg.appendChild(sv('g', {'class': 'edge rejected', 'data-from': x.from}, sv('path', {d: c.d, 'marker-end': 'url(#arrow)'})));
    svg.appendChild(box(p, 'node rejected', x.kernel || '', 'rejected: ' + (x.stage || '') + (x.outcome ? ' (' + x.outcome + ')' : ''),
                        [clip(x.summary, 60), x.provenance || '', x.kernel ? '[' + short(x.kernel) + ']' : 'no kernel'],
                        (x.summary || '') + '\n' + (x.provenance || '')));
  });
  wrap.appendChild(svg);
  s.appendChild(wrap);
  s.appendChild(el('h3', {text: 'Transitions'}));
  s.appendChild(table(['from', 'to', 'action', 'locus', 'features added', 'paired speedup', 'provenance', 'forward', 'evaluations'],
    g.edges.map(function (e) {
      return el('tr', {'class': 'transition'}, td(kernelText(e.from)), td(kernelText(e.to)), td(e.action || ''), td(e.locus || ''),
                td(list(e.features_added)), td(ratio(e.speedup), 'num'), td(e.provenance || ''),
                td((e.forward || '') + (e.forward_reason ? ': ' + e.forward_reason : '')),
                td((e.evaluations || []).map(function (i) { return '#' + i; }).join(' ')));
    }), {id: 'transitions'}));
  var rtab = el('div', {'class': 'hide-rejected'});
  rtab.appendChild(el('div', {'class': 'rejected'}, el('h3', {text: 'Rejected attempts'}),
    table(['at', 'step', 'stage', 'outcome', 'kernel', 'provenance', 'summary'], (g.rejected || []).map(function (x) {
      return el('tr', {'class': 'rejected-attempt'}, td(kernelText(x.from)), td(String(x.step === undefined ? '' : x.step), 'num'),
                td(x.stage || ''), td(x.outcome || ''), td(x.kernel ? '[' + short(x.kernel) + ']' : '\u2013'),
                td(x.provenance || ''), td(el('pre', {text: x.summary || ''})));
    }))));
  s.appendChild(rtab);
}

// ---- a line chart (the progress curve, best per generation) --------------------------------
function chart(id, pts, opt) {
  var Wd = 760, Ht = 330, L = 64, R = 20, T = 20, B = 52;
  var xs = pts.map(function (p) { return p.x; }).concat(opt.origin ? [opt.origin.x] : []);
  var ys = pts.map(function (p) { return p.y; }).concat(opt.origin ? [opt.origin.y] : []);
  var xmax = Math.max.apply(null, xs.concat([opt.xmax || 1, num(opt.budget) ? opt.budget : 0]));
  var xmin = Math.min.apply(null, xs.concat([0]));
  var ymax = Math.max.apply(null, ys.concat([1])) * 1.1, ymin = Math.min.apply(null, ys.concat([1])) * 0.9;
  if (ymax - ymin < 1e-9) { ymax += 0.5; ymin -= 0.5; }
  var X = function (x) { return L + (x - xmin) / Math.max(xmax - xmin, 1e-9) * (Wd - L - R); };
  var Y = function (y) { return T + (ymax - y) / (ymax - ymin) * (Ht - T - B); };
  var svg = sv('svg', {id: id, 'class': 'curve', width: Wd, height: Ht});
  for (var i = 0; i <= 4; ++i) {
    var yv = ymin + (ymax - ymin) * i / 4;
    svg.appendChild(sv('line', {'class': 'grid', x1: L, x2: Wd - R, y1: Y(yv), y2: Y(yv)}));
    svg.appendChild(sv('text', {x: L - 6, y: Y(yv) + 4, 'text-anchor': 'end', text: yv.toFixed(2)}));
    var xv = xmin + (xmax - xmin) * i / 4;
    svg.appendChild(sv('text', {x: X(xv), y: Ht - B + 16, 'text-anchor': 'middle', text: Math.round(xv * 10) / 10}));
  }
  svg.appendChild(sv('line', {'class': 'axis', x1: L, x2: L, y1: T, y2: Ht - B}));
  svg.appendChild(sv('line', {'class': 'axis', x1: L, x2: Wd - R, y1: Ht - B, y2: Ht - B}));
  svg.appendChild(sv('text', {x: (L + Wd - R) / 2, y: Ht - 12, 'text-anchor': 'middle', text: opt.xlabel}));
  svg.appendChild(sv('text', {x: 14, y: (T + Ht - B) / 2, 'text-anchor': 'middle',
                              transform: 'rotate(-90 14 ' + (T + Ht - B) / 2 + ')', text: clip(opt.ylabel, 60)}));
  if (num(opt.budget)) {
    svg.appendChild(sv('line', {'class': 'budget', x1: X(opt.budget), x2: X(opt.budget), y1: T, y2: Ht - B}));
    svg.appendChild(sv('text', {x: X(opt.budget) - 4, y: T + 10, 'text-anchor': 'end', text: 'budget ' + opt.budget}));
  }
  // A staircase: the best so far holds until the next point.
  var all = (opt.origin ? [opt.origin] : []).concat(pts), line = [];
  all.forEach(function (p, k) {
    if (k > 0) line.push(X(p.x) + ',' + Y(all[k - 1].y));
    line.push(X(p.x) + ',' + Y(p.y));
  });
  if (all.length) line.push(X(xmax) + ',' + Y(all[all.length - 1].y));
  svg.appendChild(sv('polyline', {points: line.join(' ')}));
  if (opt.origin)
    svg.appendChild(sv('circle', {'class': 'origin', cx: X(opt.origin.x), cy: Y(opt.origin.y), r: 5},
                       sv('title', {text: (opt.origin.label || 'start') + ': 1.000\u00d7'})));
  pts.forEach(function (p) {
    svg.appendChild(sv('circle', {'class': 'point' + (p.measured === false ? ' unmeasured' : ''), cx: X(p.x), cy: Y(p.y), r: 5,
                                  'data-kernel': p.kernel || null},
                       sv('title', {text: (p.label || '') + ': ' + p.y.toFixed(3) + ' at ' + p.x + (p.measured === false ? ' (not measured)' : '')})));
  });
  return svg;
}

function progress() {
  var p = data.progress;
  if (!p) return;
  var s = section('progress', p.title);
  s.appendChild(chart('progress-curve', p.points || [], {origin: p.origin, xmax: p.x_max, budget: p.budget,
                                                       xlabel: p.x_label, ylabel: p.y_label}));
  s.appendChild(el('p', {'class': 'muted', text: (p.points || []).length + ' point(s). ' + p.y_label + '.'}));
}

// ---- tune: each configuration's paired speedup over the default, best first -----------------
function configurations() {
  var tn = data.tune;
  if (!tn) return;
  var s = section('configurations', tn.title);
  var rows = tn.configurations || [], timed = rows.filter(function (r) { return num(r.speedup); });
  // An interval is drawn only where both ends are finite numbers (a stored one may hold null).
  var iv = function (r) { return r.interval && num(r.interval[0]) && num(r.interval[1]) ? r.interval : null; };
  var hi = Math.max.apply(null, timed.map(function (r) { return iv(r) ? iv(r)[1] : r.speedup; }).concat([1])) * 1.05;
  var lo = Math.min.apply(null, timed.map(function (r) { return iv(r) ? iv(r)[0] : r.speedup; }).concat([1])) * 0.95;
  var Wd = 760, L = 190, R = 70, T = 10, RH = 18, Ht = T + rows.length * RH + 40;
  var X = function (x) { return L + (x - lo) / Math.max(hi - lo, 1e-9) * (Wd - L - R); };
  var svg = sv('svg', {id: 'configuration-chart', 'class': 'curve bars', width: Wd, height: Ht});
  rows.forEach(function (r, i) {
    var y = T + i * RH, mid = y + RH / 2;
    var tip = r.label + ': ' + r.outcome + (num(r.speedup) ? ' ' + ratio(r.speedup) : '') +
              (iv(r) ? ' [' + iv(r)[0].toFixed(3) + ', ' + iv(r)[1].toFixed(3) + ']' : '') +
              (r.default ? ' (default)' : '') + (r.winner ? ' (winner)' : '') + (r.quick ? ' (quick)' : '') +
              (r.cached ? ' (cached)' : '');
    svg.appendChild(sv('text', {x: L - 6, y: mid + 4, 'text-anchor': 'end', text: clip(r.label, 30)}));
    if (!num(r.speedup)) {
      svg.appendChild(sv('text', {'class': 'failed', x: L + 4, y: mid + 4, text: r.outcome}, sv('title', {text: tip})));
      return;
    }
    var cls = 'bar' + (r.winner ? ' winner' : '') + (r.default ? ' default' : '') + (r.quick ? ' quick' : '');
    // From the default's 1 to the speedup: a slower configuration's bar runs left of the axis.
    svg.appendChild(sv('rect', {'class': cls, x: Math.min(X(1), X(r.speedup)), y: y + 3,
                                width: Math.max(1, Math.abs(X(r.speedup) - X(1))), height: RH - 6},
                       sv('title', {text: tip})));
    if (iv(r))
      svg.appendChild(sv('line', {'class': 'whisker', x1: X(iv(r)[0]), x2: X(iv(r)[1]), y1: mid, y2: mid}));
    svg.appendChild(sv('text', {x: X(r.speedup) + 4, y: mid + 4, text: ratio(r.speedup)}));
  });
  var base = T + rows.length * RH;
  svg.appendChild(sv('line', {'class': 'axis', x1: X(1), x2: X(1), y1: T, y2: base}));
  svg.appendChild(sv('line', {'class': 'axis', x1: L, x2: Wd - R, y1: base, y2: base}));
  [lo, 1, hi].forEach(function (v) {  // the ends only where they do not crowd the default's 1
    if (v === 1 || Math.abs(X(v) - X(1)) > 36)
      svg.appendChild(sv('text', {x: X(v), y: base + 14, 'text-anchor': 'middle', text: v.toFixed(2)}));
  });
  svg.appendChild(sv('text', {x: (L + Wd - R) / 2, y: base + 32, 'text-anchor': 'middle', text: clip(tn.x_label, 90)}));
  s.appendChild(el('div', {'class': 'scroll'}, svg));
  s.appendChild(el('p', {'class': 'muted', text: rows.length + ' configuration(s), ' + timed.length + ' timed; the default ' +
    (tn.default || '(none)') + '; the winner ' + (tn.winner || '(none)') + (tn.improved ? ' (the crown decided it faster)' :
    ' (no configuration decided faster than the default)') + '. Bars: the paired speedup; whiskers: its 95% interval.'}));
}

// ---- evolve: the archive grid and the best score per generation ------------------------------
function archive() {
  var ev = data.evolve;
  if (!ev) return;
  var s = section('archive', 'Archive (MAP-Elites)');
  var ds = ev.descriptors || [];
  function bins(d) {
    var e = d.edges || [], out = [];
    for (var i = 0; i <= e.length; ++i)
      out.push(i === 0 ? '< ' + e[0] : i === e.length ? '\u2265 ' + e[e.length - 1] : e[i - 1] + '\u2013' + e[i]);
    return e.length ? out : ['all'];
  }
  var colBins = ds.length ? bins(ds[0]) : ['all'];
  var rowNames = [''];
  ds.slice(1).forEach(function (d) {
    var next = [];
    rowNames.forEach(function (prefix) { bins(d).forEach(function (b) { next.push((prefix ? prefix + ', ' : '') + d.name + ' ' + b); }); });
    rowNames = next;
  });
  var elites = ev.archive || [], maxScore = Math.max.apply(null, elites.map(function (e) { return e.score; }).concat([1]));
  for (var isl = 0; isl < (ev.islands || 1); ++isl) {
    var CW = 96, RH = 40, L = 170, T = 34;
    var svg = sv('svg', {'class': 'grid-svg', 'data-island': isl, width: L + colBins.length * CW + 10, height: T + rowNames.length * RH + 10});
    svg.appendChild(sv('text', {x: 4, y: 14, text: 'island ' + isl + ' \u2014 columns: ' + (ds[0] ? ds[0].name : 'one cell')}));
    colBins.forEach(function (b, c) { svg.appendChild(sv('text', {x: L + c * CW + CW / 2, y: T - 6, 'text-anchor': 'middle', text: b})); });
    rowNames.forEach(function (rn, r) {
      svg.appendChild(sv('text', {x: L - 6, y: T + r * RH + RH / 2 + 4, 'text-anchor': 'end', text: clip(rn, 28)}));
      colBins.forEach(function (b, c) {
        var cell = elites.filter(function (e) {
          if (e.island !== isl) return false;
          var co = e.coords || [], rr = 0;
          for (var k = 1; k < ds.length; ++k) rr = rr * ((ds[k].edges || []).length + 1) + (co[k] || 0);
          return (co[0] || 0) === c && rr === r;
        })[0];
        var x = L + c * CW, y = T + r * RH;
        if (!cell) { svg.appendChild(sv('rect', {'class': 'cell', x: x, y: y, width: CW - 4, height: RH - 4})); return; }
        var shade = Math.round(235 - 120 * Math.max(0, Math.min(1, cell.score / maxScore)));
        svg.appendChild(sv('g', {'class': 'elite', 'data-kernel': cell.kernel},
          sv('title', {text: 'kernel ' + cell.kernel + '\nscore ' + cell.score + '\nspeedup ' + ratio(cell.speedup) +
                             '\ngeneration ' + cell.generation + '\nvalues ' + JSON.stringify(cell.values)}),
          sv('rect', {'class': 'cell filled', x: x, y: y, width: CW - 4, height: RH - 4, style: 'fill: rgb(' + shade + ',245,' + shade + ')'}),
          sv('text', {x: x + 6, y: y + 15, text: 'score ' + Number(cell.score).toFixed(2)}),
          sv('text', {x: x + 6, y: y + 29, text: short(cell.kernel)})));
      });
    });
    s.appendChild(el('div', {'class': 'scroll'}, svg));
  }
  s.appendChild(el('p', {'class': 'muted', text: elites.length + ' elite(s); best ' + short(ev.best) + ' at ' + ratio(ev.best_speedup) +
                                               ' over the baseline' + (ev.stopped ? '; stopped: ' + ev.stopped : '')}));
  s.appendChild(el('h3', {text: 'Best score per generation'}));
  var gp = (ev.best_per_generation || []).map(function (g) { return {x: g.generation, y: g.best_score, label: 'generation ' + g.generation}; });
  var c = chart('generation-curve', gp, {xmax: gp.length, xlabel: 'generation', ylabel: 'best composite score'});
  Array.prototype.forEach.call(c.querySelectorAll('circle.point'), function (p) { p.setAttribute('class', 'point gen-point'); });
  s.appendChild(c);
}

// ---- skill cards ----------------------------------------------------------------------------
function cardView(c) {
  var dl = el('dl', {});
  function row(k, v) { dl.appendChild(el('dt', {text: k})); dl.appendChild(el('dd', {'data-field': k}, v)); }
  function ul(xs) { return xs && xs.length ? el('ul', {}, xs.map(function (x) { return el('li', {text: x}); })) : 'none'; }
  row('intent', c.intent || '\u2013');
  row('anchor', c.anchor || '\u2013');
  row('action', (c.action || '') + ' (operator ' + (c.operator || '?') + '; source tasks ' + list(c.source_tasks) + ')');
  row('contract', 'requires [' + (c.requires || []).join(', ') + '] provides [' + (c.provides || []).join(', ') +
      '] conflicts [' + (c.conflicts || []).join(', ') + ']');
  row('preconditions', ul(c.preconditions));
  row('constraints', ul((c.constraints || []).map(function (k) { return k.what + ' = ' + k.value; })));
  row('effect', (c.effect || '\u2013') + ' (declared ' + ratio(c.declared_ratio) + ' on ' + (c.target || '?') + ')');
  row('risk', c.risk || '\u2013');
  row('scope', c.scope || '\u2013');
  row('evidence', (c.evidence || []).length + ' evaluation(s): ' + (c.evidence || []).map(function (i) { return '#' + i; }).join(' ') +
      '; sources ' + list(c.sources));
  row('carriers', Object.keys(c.carriers || {}).map(function (k) {
    return el('details', {}, el('summary', {text: k + ' (' + String(c.carriers[k]).split('\n').length + ' lines)'}), el('pre', {text: c.carriers[k]}));
  }));
  row('verification log', ul(c.verification_log));
  row('trials', (c.trials || []).length ? table(['when', 'task', 'verdict', 'outcome', 'ratio', 'provenance', 'reason'],
      c.trials.map(function (t) {
        return el('tr', {'class': 'trial'}, td(t.created_at || ''), td(t.task || ''), td(t.verdict || ''), td(t.outcome || ''),
                  td(ratio(t.ratio), 'num'), td(t.provenance ? (t.provenance.kind || '') + (t.provenance.detail ? ':' + t.provenance.detail : '') : ''),
                  td(t.reason || ''));
      })) : 'no trials yet');
  var prov = c.provenance ? (c.provenance.kind || '') + (c.provenance.detail ? ':' + c.provenance.detail : '') : '';
  row('provenance', prov || '\u2013');
  if (c.used_in_run) row('used in this run', c.used_in_run);
  return el('section', {'class': 'card', 'data-card': c.name},
            el('h3', {}, c.name, el('span', {'class': 'badge ' + (c.status || ''), text: (c.status || '') + (c.status_reason ? ': ' + clip(c.status_reason, 80) : '')})),
            dl);
}

function cards() {
  var list0 = data.kind === 'card' ? [data.card] : (data.cards || []);
  var s = section('cards', data.kind === 'card' ? 'The card' : 'Skill cards used (' + list0.length + ')');
  if (!list0.length) { s.appendChild(el('p', {'class': 'muted', text: 'This run used no skill cards.'})); return; }
  list0.forEach(function (c) { s.appendChild(cardView(c)); });
}

function evidence() {
  if (data.kind !== 'card') return;
  var s = section('evidence', 'Lineage evidence');
  s.appendChild(table(['source', 'task', 'step', 'from \u2192 to', 'action', 'paired speedup', 'provenance', 'forward', 'evaluations'],
    (data.lineage_evidence || []).map(function (x) {
      if (!x.found) return el('tr', {'class': 'evidence-row missing'}, td(x.source), el('td', {colspan: 8, text: 'not in this store'}));
      return el('tr', {'class': 'evidence-row'}, td(x.source), td(x.task), td(String(x.step), 'num'),
                td(x.from.label + ' ' + (x.from.name || '') + ' \u2192 ' + x.to.label + ' ' + (x.to.name || '')), td(x.action),
                td(ratio(x.speedup), 'num'), td(x.provenance), td(x.forward + (x.forward_reason ? ': ' + x.forward_reason : '')),
                td((x.evaluations || []).map(function (i) { return '#' + i; }).join(' ')));
    }), {id: 'lineage-evidence'}));
}

// ---- evaluations ----------------------------------------------------------------------------
function spark(p) {
  if (!p || !p.a_seconds || !p.a_seconds.length) return '\u2013';
  var all = p.a_seconds.concat(p.b_seconds || []), lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
  var Wd = 120, Ht = 30, n = Math.max(p.a_seconds.length, (p.b_seconds || []).length, 2);
  function pts(xs) {
    return xs.map(function (v, i) { return (i * (Wd - 4) / (n - 1) + 2).toFixed(1) + ',' + (Ht - 2 - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (Ht - 4)).toFixed(1); }).join(' ');
  }
  return sv('svg', {'class': 'samples', width: Wd, height: Ht},
            sv('title', {text: 'candidate (blue) and baseline (grey) seconds per call, one point per block: ' + secs(lo) + ' \u2013 ' + secs(hi)}),
            sv('polyline', {'class': 'b', points: pts(p.b_seconds || [])}), sv('polyline', {'class': 'a', points: pts(p.a_seconds)}));
}

function evaluations() {
  var ev = data.evaluations || [];
  var s = section('evaluations', 'Evaluations (' + ev.length + ')');
  s.appendChild(el('div', {'class': 'scroll'}, table(['#', 'kernel', 'baseline', 'outcome', 'message', 'checks', 'max rel err', 'norm err', 'median', 'dispersion',
                       'paired ratio [95% CI]', 'A/A', 'samples', 'detail'],
    ev.map(function (e) {
      var ok = e.outcome === 'ok', und = e.outcome === 'unstable';
      var p = e.paired, aa = e.aa;
      var det = el('details', {}, el('summary', {text: 'more'}),
        el('div', {text: 'provenance ' + (e.provenance ? (e.provenance.kind || '') + (e.provenance.detail ? ':' + e.provenance.detail : '') : '') +
                         '; target ' + e.target + '; timed shape ' + (e.timing_shape || '\u2013') + '; wall ' + secs(e.wall_seconds)}),
        el('div', {text: 'stages: ' + (e.stage_seconds || []).map(function (x) { return x.stage + ' ' + secs(x.seconds); }).join(', ')}),
        p ? el('div', {text: 'candidate samples (s/call): ' + p.a_seconds.map(sci).join(' ')}) : null,
        p ? el('div', {text: 'baseline samples (s/call): ' + (p.b_seconds || []).map(sci).join(' ')}) : null,
        p ? el('div', {text: 'series stopped: ' + p.stop_reason + ', rse ' + pct(p.rse) + ', timed by ' + (p.a_method || '?')}) : null,
        e.checks.first_mismatches.length ? el('pre', {text: e.checks.first_mismatches.join('\n')}) : null,
        e.diagnostics ? el('pre', {text: e.diagnostics}) : null);
      return el('tr', {'class': 'eval ' + (ok ? 'ok' : und ? 'undecided' : 'failed'), 'data-eval': e.id},
                td(String(e.id), 'num'), td(kernelText(e.kernel_hash) === '[' + short(e.kernel_hash) + ']' ? (e.kernel_name || '') + ' [' + short(e.kernel_hash) + ']' : kernelText(e.kernel_hash)),
                td(e.baseline_name || '\u2013'), td(e.outcome, 'outcome'), td(clip(e.message, 160)),
                td(e.checks.passed + '/' + e.checks.total, 'num'), td(sci(e.checks.max_rel_err), 'num'), td(sci(e.checks.norm_err), 'num'),
                td(secs(e.median_seconds), 'num'), td(pct(e.dispersion), 'num'),
                td(p ? ratio(p.ratio) + ' [' + p.ci_low.toFixed(3) + ', ' + p.ci_high.toFixed(3) + ']' : '\u2013', 'num'),
                td(aa ? ratio(aa.ratio) + ' [' + aa.ci_low.toFixed(3) + ', ' + aa.ci_high.toFixed(3) + ']' : '\u2013', 'num'),
                td(spark(p)), td(det));
    }), {id: 'evaluation-table'})));
}

// ---- source diffs ---------------------------------------------------------------------------
function diffs() {
  var ds = data.diffs || [];
  if (data.kind === 'card') return;
  var s = section('diffs', 'Source diffs between consecutive kernels (' + ds.length + ')');
  ds.forEach(function (d) {
    var det = el('details', {'class': 'diff', 'data-from': d.from, 'data-to': d.to},
                 el('summary', {text: (d.from_label || short(d.from)) + ' \u2192 ' + (d.to_label || short(d.to)) + '  ' + (d.action || '') +
                                      '  (+' + d.added + ' \u2212' + d.removed + ')' + (d.truncated ? ', cut' : '')}));
    if (d.missing && d.missing.length) det.appendChild(el('p', {'class': 'muted', text: 'not in the store: ' + d.missing.join(', ')}));
    (d.files || []).forEach(function (f) {
      det.appendChild(el('div', {'class': 'mono', text: f.change + ': ' + f.path + ' (+' + f.added + ' \u2212' + f.removed + ')' +
                                                     (f.whole ? ' \u2014 too large to align, shown whole' : '')}));
      var pre = el('pre', {});
      f.hunks.forEach(function (h, hi) {
        if (hi) pre.appendChild(el('span', {'class': 'hunk-sep', text: '\u22ef'}));
        h.lines.forEach(function (l) {
          var cls = l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx';
          pre.appendChild(el('span', {'class': cls}, el('span', {'class': 'no', text: (l.old || '') + ' ' + (l.new || '')}), l.op + ' ' + l.text));
        });
      });
      det.appendChild(pre);
    });
    s.appendChild(det);
  });
  if (ds.length) s.querySelector('details.diff').setAttribute('open', '');
}

guard('header', header);
guard('lineage graph', graph);
guard('progress curve', progress);
guard('configurations', configurations);
guard('archive', archive);
guard('cards', cards);
guard('lineage evidence', evidence);
guard('evaluations', evaluations);
guard('diffs', diffs);
document.body.setAttribute('data-rendered', 'lathe');
})();
)JS";

}  // namespace lathe::report
