"""The page's fixed text: the Content-Security-Policy, the inline CSS and the chart palette."""

#: no remote loads of any kind: only inline styles and data: images
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_BEST = ' class="best" title="best in column"'
_PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5")
_CSS = """
:root{--fg:#1d1f24;--muted:#5b6270;--line:#d9dde3;--bg:#fff;--card:#f5f7fa;--best:#e4f3e6}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1200px;padding:24px;overflow-wrap:break-word}
h1{font-size:24px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 8px;border-bottom:2px solid
var(--line);padding-bottom:4px}h3{font-size:16px;margin:20px 0 8px}
.muted{color:var(--muted)}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px;
min-width:150px;flex:1}.card b{display:block;font-size:20px}.card span{color:var(--muted);
font-size:12px}.card span+span{display:block;margin-top:4px}
.card.pick{border-color:#3ca951}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px;width:100%}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right;vertical-align:top}
th{background:var(--card);font-weight:600}th:first-child,td:first-child,td.t,th.t{text-align:left}
td.best{background:var(--best);font-weight:600}.iv{color:var(--muted);font-size:11px}
.failed,.error{color:#b3261e;font-weight:600}.passed{color:#1e7b34}
.wide{overflow-x:auto;max-width:100%}td:first-child{white-space:nowrap}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0;flex:1;min-width:320px}
figcaption{font-size:12px;color:var(--muted)}svg{max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#333}svg text.h{font-weight:600}
svg text.on-dark{fill:#fff}svg text.v-worse,svg text.v-regressed{fill:#b3261e}
svg text.v-better{fill:#1e7b34}figure.stress-chart{flex:none;min-width:0;max-width:100%}
details{margin:6px 0;border:1px solid var(--line);border-radius:6px;padding:4px 10px}
summary{cursor:pointer;font-weight:600}code,pre{font:12px ui-monospace,Menlo,Consolas,monospace}
pre{background:var(--card);padding:10px;overflow:auto;white-space:pre-wrap}
.hit{color:#1e7b34;font-weight:600}.miss{color:#b3261e}ol.ids{margin:0;padding-left:20px}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
.v-regressed,.v-worse{color:#b3261e;font-weight:600}.v-better{color:#1e7b34;font-weight:600}
.v-inconclusive{color:#8a5a00}h4{font-size:14px;margin:16px 0 6px}
.grids{display:flex;flex-wrap:wrap;gap:16px}figure.grid{flex:0 1 auto;min-width:0;max-width:100%}
table.heat{width:auto}table.heat td{min-width:64px;text-align:center}
.cut{color:#b3261e}td.miss-aim{color:#b3261e;font-weight:600}ul.notes{margin:4px 0 16px}
table.pq td{white-space:normal}table.pq tr.qtext td{background:var(--card);border-bottom:none;
padding-top:6px}table.pq td.wide-col,table.pq th.wide-col{width:55%}table.pq td.score{
white-space:nowrap}ol.ids{display:flex;flex-wrap:wrap;gap:2px 18px;margin:0;padding:0;
list-style:none;counter-reset:rank}ol.ids li::before{counter-increment:rank;
content:counter(rank) ". ";color:var(--muted)}.chunk{font-size:12px;margin-top:2px}
.qcounts{font-size:15px;margin:4px 0 8px}.qdiff{margin-bottom:12px}code.rel{color:#1e7b34;
font-weight:600}td.lost code,td.pushed code{color:#b3261e}.drop{white-space:nowrap}
@media print{body{max-width:none;padding:0;font-size:11px}.wide{overflow:visible}
table,figure,.card{break-inside:avoid}details{border:none;padding:0}
a{color:inherit;text-decoration:none}}
"""
