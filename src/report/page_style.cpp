// The report page's style sheet: plain CSS, no fonts or images to fetch.
#include "report/html.h"

namespace lathe::report {

const char* const page_style = R"CSS(
:root { --fg: #1b1f24; --muted: #5a6370; --line: #d0d7de; --bg: #ffffff; --soft: #f5f7f9;
        --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 1400px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 4px; word-break: break-all; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
nav { position: sticky; top: 0; background: var(--bg); border-bottom: 1px solid var(--line); padding: 6px 0; z-index: 2; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre { background: var(--soft); padding: 8px; overflow-x: auto; margin: 4px 0; white-space: pre; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.muted { color: var(--muted); }
.verdict { border-left: 4px solid var(--accent, #0969da); padding: 4px 12px; margin: 10px 0; }
.verdict .headline { font-size: 1.15em; font-weight: 600; margin: 4px 0 6px; }
.banner { border: 1px solid var(--warn); background: #fff8c5; padding: 8px 12px; margin: 10px 0; border-radius: 4px; }
#lathe-errors { border: 2px solid var(--bad); background: #ffebe9; padding: 8px 12px; margin: 8px; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
.meta dt { color: var(--muted); }
.meta dd { margin: 0; word-break: break-word; }
.figures { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.figure { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; min-width: 120px; }
.figure .v { font-size: 18px; font-weight: 600; }
.figure .k { color: var(--muted); font-size: 12px; }
.scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; background: #fcfdfe; }
svg text { font-family: system-ui, sans-serif; }
.node rect { fill: #ffffff; stroke: #57606a; stroke-width: 1.2; }
.node.start rect, .node.naive-end rect { fill: #eef6ff; }
.node.expert rect, .node.best rect { fill: #e9f7ee; stroke: var(--ok); stroke-width: 2; }
.node.rejected rect { fill: #fff5f5; stroke: var(--bad); stroke-dasharray: 4 3; }
.node text.title { font-weight: 600; font-size: 12px; }
.node text.line { font-size: 11px; fill: var(--muted); }
.edge path { fill: none; stroke: #57606a; stroke-width: 1.5; }
.edge.mechanical path { stroke-dasharray: 6 3; }
.edge.evidence path { stroke: var(--accent); stroke-width: 3; }
.edge text { font-size: 11px; fill: var(--fg); paint-order: stroke; stroke: #ffffff; stroke-width: 3px; }
.edge text.prov { fill: var(--muted); }
.edge.rejected path { stroke: var(--bad); stroke-dasharray: 3 3; }
.hide-rejected .rejected { display: none; }
.curve .axis { stroke: #57606a; }
.curve .grid { stroke: #e6e9ed; }
.curve .budget { stroke: var(--warn); stroke-dasharray: 5 4; }
.curve polyline { fill: none; stroke: var(--accent); stroke-width: 2; }
.curve circle.point { fill: var(--accent); }
.curve circle.point.unmeasured { fill: #ffffff; stroke: var(--accent); stroke-width: 2; }
.curve circle.origin { fill: #ffffff; stroke: #57606a; stroke-width: 1.5; }
.curve text { font-size: 11px; fill: var(--muted); }
.bars rect.bar { fill: var(--accent); opacity: 0.55; }
.bars rect.bar.default { fill: #57606a; }
.bars rect.bar.winner { opacity: 1; }
.bars rect.bar.quick { fill: #ffffff; stroke: var(--accent); }
.bars line.whisker { stroke: #24292f; stroke-width: 1.5; }
.bars text.failed { fill: var(--warn); }
.grid-svg rect.cell { fill: #f6f8fa; stroke: #d0d7de; }
.grid-svg rect.cell.filled { stroke: #1a7f37; }
.grid-svg text { font-size: 11px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; margin: 10px 0; }
.card dl { display: grid; grid-template-columns: 150px 1fr; gap: 3px 12px; margin: 6px 0; }
.card dt { color: var(--muted); font-weight: 600; }
.card dd { margin: 0; word-break: break-word; }
.badge { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; border: 1px solid var(--line); margin-left: 6px; }
.badge.admitted { border-color: var(--ok); color: var(--ok); }
.badge.refused { border-color: var(--bad); color: var(--bad); }
tr.eval.ok td.outcome { color: var(--ok); }
tr.eval.failed td.outcome { color: var(--bad); }
tr.eval.undecided td.outcome { color: var(--warn); }
.samples polyline { fill: none; stroke-width: 1.2; }
.samples polyline.a { stroke: var(--accent); }
.samples polyline.b { stroke: #8c959f; }
.diff .add { background: #e6ffec; display: block; }
.diff .del { background: #ffebe9; display: block; }
.diff .ctx { display: block; }
.diff .hunk-sep { display: block; color: var(--muted); }
.diff .no { color: #8c959f; display: inline-block; width: 4.5em; user-select: none; }
details { margin: 4px 0; }
summary { cursor: pointer; }
)CSS";

}  // namespace lathe::report
