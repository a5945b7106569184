// The dashboard's whole stylesheet, inlined in every page: no external CDN or font (it must work
// offline). System font stack; tabular figures so numbers line up in tables.
export const DASHBOARD_CSS = `
:root{--bg:#f6f7f9;--panel:#fff;--ink:#16181d;--muted:#667085;--line:#e4e7ec;--accent:#4f46e5;--accent-soft:#eef2ff;
--good:#067647;--good-soft:#ecfdf3;--bad:#b42318;--bad-soft:#fef3f2;--warn:#b54708;--warn-soft:#fffaeb;
--ok:#12b76a;--empty:#fdb022;--badargs:#f79009;--toolerr:#f04438;--crash:#7a271a}
*{box-sizing:border-box}
html,body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.num,td.n,th.n{font-variant-numeric:tabular-nums;text-align:right}
header.top{background:#101828;color:#fff;padding:0 24px;display:flex;align-items:center;gap:16px;min-height:56px}
header.top .brand{display:flex;align-items:center;gap:10px;font-weight:650;font-size:16px;color:#fff}
header.top .project{color:#98a2b3;font-size:13px;display:flex;min-width:0;flex:0 1 auto}
header.top .spacer{flex:1 0 0}
header.top .brand,header.top a.nav,header.top form{flex:none}
header.top form{margin:0}
header.top button{background:transparent;border:1px solid #475467;color:#d0d5dd;border-radius:6px;padding:5px 10px;cursor:pointer;font:inherit;font-size:12px}
main{max-width:1280px;margin:0 auto;padding:20px 24px 48px}
.toolbar{display:flex;flex-wrap:wrap;align-items:flex-end;gap:12px;margin-bottom:18px}
.toolbar h1{font-size:20px;margin:0 auto 0 0;font-weight:650}
.toolbar h1 small{display:block;font-size:12px;color:var(--muted);font-weight:400;margin-top:2px}
.picker{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-end;background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:8px 10px}
.picker label{display:flex;flex-direction:column;font-size:11px;color:var(--muted);gap:2px;text-transform:uppercase;letter-spacing:.03em}
.picker input,.picker select{font:inherit;font-size:13px;border:1px solid var(--line);border-radius:6px;padding:4px 6px;background:#fff;color:var(--ink)}
.picker button{font:inherit;font-size:13px;border:0;border-radius:6px;padding:6px 12px;background:var(--accent);color:#fff;cursor:pointer}
.quick{display:flex;gap:4px}
.quick a{font-size:12px;padding:5px 8px;border-radius:6px;border:1px solid var(--line);background:#fff;color:var(--ink)}
.quick a.on{background:var(--accent-soft);border-color:#c7d2fe;color:var(--accent)}
.cards{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:12px;margin-bottom:18px}
@media (max-width:720px){.cards{grid-template-columns:repeat(2,minmax(0,1fr))}}
.card{background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card .label{font-size:12px;color:var(--muted)}
.card .value{font-size:24px;font-weight:650;margin-top:2px;font-variant-numeric:tabular-nums}
.card .sub{font-size:12px;color:var(--muted);margin-top:2px}
.delta{font-size:12px;font-weight:600;border-radius:999px;padding:1px 7px;margin-left:6px;vertical-align:middle}
.delta.good{color:var(--good);background:var(--good-soft)}.delta.bad{color:var(--bad);background:var(--bad-soft)}.delta.flat{color:var(--muted);background:#f2f4f7}
.grid2{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,1fr);gap:16px;margin-bottom:16px;align-items:start}
.grid2.even{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
@media (max-width:900px){.grid2,.grid2.even{grid-template-columns:1fr}}
section.panel{background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:14px 16px;margin-bottom:16px;min-width:0}
section.panel h2{font-size:14px;margin:0 0 10px;font-weight:650;display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 8px}
section.panel h2 small{font-weight:400;color:var(--muted);font-size:12px}
.scroll{overflow-x:auto}
.scroll[data-cut]{-webkit-mask-image:linear-gradient(to right,#000 calc(100% - 40px),rgba(0,0,0,.15));mask-image:linear-gradient(to right,#000 calc(100% - 40px),rgba(0,0,0,.15))}
.scroll-hint{display:none;font-size:12px;color:var(--muted);margin:0 0 4px;text-align:right}
.scroll-hint[data-shown]{display:block}
table{border-collapse:collapse;width:100%;font-size:13px}
th{font-size:11px;text-transform:uppercase;letter-spacing:.03em;color:var(--muted);font-weight:600;text-align:left;padding:6px 7px;border-bottom:1px solid var(--line);white-space:nowrap}
th[data-sort]{cursor:pointer;user-select:none}th[data-sort]:hover{color:var(--ink)}
th.sorted-asc::after{content:" ▲";font-size:9px}th.sorted-desc::after{content:" ▼";font-size:9px}
td{padding:7px 7px;border-bottom:1px solid #f2f4f7;white-space:nowrap}
tr:hover td{background:#fafbfc}
td.tool a{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.pill{display:inline-block;font-size:11px;border-radius:999px;padding:1px 8px;font-weight:600;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin-left:6px}
ul.insights .pill{margin-left:0}
.pill.dead{background:var(--bad-soft);color:var(--bad)}.pill.unreg{background:var(--warn-soft);color:var(--warn)}
.pill.policy{background:var(--accent-soft);color:var(--accent)}.pill.high{background:var(--bad-soft);color:var(--bad)}
.pill.medium{background:var(--warn-soft);color:var(--warn)}.pill.low{background:#f2f4f7;color:var(--muted)}
.rate-bad{color:var(--bad);font-weight:600}.rate-warn{color:var(--warn);font-weight:600}
ul.insights{list-style:none;margin:0;padding:0}
ul.insights .alert-me{margin-left:auto;white-space:nowrap;font-size:12px}
header.top a.nav{margin-right:4px}
#suggested-rule pre{white-space:pre-wrap;word-break:break-all;background:#f8fafc;padding:10px;border-radius:6px}
ul.insights li{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:baseline;padding:8px 0;border-bottom:1px solid #f2f4f7}
ul.insights li>span:not(.pill){flex:1 1 9em;min-width:0;overflow-wrap:anywhere}
ul.insights bdi.name{max-width:100%}
ul.insights li:last-child{border-bottom:0}
ul.insights ul.also{list-style:none;margin:6px 0 0;padding:0 0 0 10px;border-left:2px solid var(--line)}
ul.insights ul.also li{padding:3px 0;border-bottom:0;font-size:12.5px}
.muted{color:var(--muted)}.empty-state{color:var(--muted);font-size:13px;padding:8px 0}
.bar{display:flex;height:12px;border-radius:6px;overflow:hidden;background:#f2f4f7}
.bar span{display:block;height:100%}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;color:var(--muted);margin-top:8px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:5px;vertical-align:-1px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;fill:#667085}
.chart-narrow{display:none}
@media (max-width:640px){.chart-wide{display:none}.chart-narrow{display:block}}
.signin{max-width:420px;margin:12vh auto;background:var(--panel);border:1px solid var(--line);border-radius:12px;padding:28px}
.signin h1{font-size:20px;margin:0 0 6px}.signin p{color:var(--muted);margin:0 0 16px}
.signin input{width:100%;font:inherit;padding:9px 10px;border:1px solid var(--line);border-radius:8px;margin-bottom:12px;font-family:ui-monospace,Menlo,monospace;font-size:13px}
.signin button{width:100%;font:inherit;padding:9px;border:0;border-radius:8px;background:var(--accent);color:#fff;font-weight:600;cursor:pointer}
.explore-link{font-size:11px;color:var(--muted)}
td a.explore-link,td.tool a.explore-link{display:block;font-weight:400;font-family:inherit;font-size:11px;width:max-content}
.explore-form{display:flex;flex-direction:column;gap:8px;margin-bottom:12px}
.explore-form fieldset{border:1px solid var(--line);border-radius:6px;display:flex;flex-wrap:wrap;gap:6px 14px;min-width:0;max-width:100%}
.explore-form label{display:flex;flex-direction:column;font-size:11px;color:var(--muted);gap:2px}
.explore-form label.check{flex-direction:row;align-items:center;gap:4px;font-size:13px;color:var(--ink)}
.explore-form input[type=text],.explore-form select,.explore-form input[type=number]{font:inherit;font-size:13px;border:1px solid var(--line);border-radius:6px;padding:4px 6px;max-width:16em}
.explore-form button{align-self:flex-start;font:inherit;font-size:13px;border:0;border-radius:6px;padding:6px 12px;background:var(--accent);color:#fff;cursor:pointer}
.error{background:var(--bad-soft);color:var(--bad);border-radius:8px;padding:8px 10px;margin-bottom:12px;font-size:13px}
.signin p.request-id{margin:12px 0 0;font-size:12px}
.crumbs{font-size:12px;color:var(--muted);margin-bottom:4px}
dl.facts{display:grid;grid-template-columns:auto 1fr;gap:6px 14px;margin:0;font-size:13px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;font-variant-numeric:tabular-nums}
bdi.name{display:inline-block;max-width:22em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;vertical-align:bottom}
bdi.name.wide{max-width:min(60vw,48em)}
header.top bdi.name{max-width:100%}
td.tool bdi.name,td bdi.name{max-width:14em}
#tools-table td,#tools-table th{padding-left:6px;padding-right:6px}
.cc{display:inline-block;font:600 9px/1.3 ui-monospace,Menlo,monospace;color:var(--bad);border:1px solid currentColor;border-radius:3px;padding:0 2px;margin:0 1px;vertical-align:1px}
.picker select{max-width:16em}
form.search{display:flex;gap:6px;margin:0 0 10px}
form.search input{font:inherit;font-size:13px;border:1px solid var(--line);border-radius:6px;padding:4px 8px;min-width:16em}
form.search button{font:inherit;font-size:12px;border:1px solid var(--line);border-radius:6px;padding:4px 10px;background:#fff;cursor:pointer}
nav.pager{display:flex;justify-content:space-between;align-items:center;font-size:13px;margin-top:10px}
p.more{font-size:12px;margin:6px 0 0}
footer.foot{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}
.notice{background:var(--accent-soft);color:var(--accent);border-radius:8px;padding:8px 10px;margin-bottom:12px;font-size:13px}
.admin-bar{display:flex;gap:8px;align-items:center;margin-left:auto}
form.inline{display:inline-block;margin:0 4px 0 0}
form.inline button,.rule-form button{font:inherit;font-size:12px;border:1px solid var(--line);border-radius:6px;padding:4px 10px;background:#fff;cursor:pointer}
button.danger{color:var(--bad);border-color:var(--bad-soft)}
form.rule-form{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:flex-end;margin:10px 0;font-size:12px;color:var(--muted)}
form.rule-form label{display:flex;flex-direction:column;gap:3px}
form.rule-form label.check{flex-direction:row;align-items:center;gap:4px;color:var(--ink)}
form.rule-form .wide{flex-basis:100%}
form.rule-form input,form.rule-form select{font:inherit;font-size:13px;color:var(--ink);border:1px solid var(--line);border-radius:6px;padding:4px 6px}
form.rule-form input[type=number]{width:7em}
form.rule-form fieldset{border:1px solid var(--line);border-radius:6px;display:flex;flex-wrap:wrap;gap:6px 14px;min-width:0;max-width:100%}
form.rule-form label.check{max-width:100%;min-width:0}
form.rule-form label.check bdi.name{max-width:calc(100% - 96px)}
form.rule-form label{max-width:100%}
form.rule-form input,form.rule-form select{max-width:100%}
details.why{margin-top:2px}
details.why summary{cursor:pointer;color:var(--accent)}
details.why ul{margin:6px 0 0;padding-left:16px;color:var(--ink);font-size:12px;line-height:1.4}
details.why li{margin:3px 0}
details.why .why-key{color:var(--warn)}
.card:has(details.why[open]){grid-column:1/-1}
sup.why-mark{color:var(--muted);margin-left:2px;font-size:9px}
bdi.name{max-width:min(22em,100%)}
.signin{max-width:min(420px,calc(100% - 24px))}
section.panel p,.card .sub{overflow-wrap:anywhere}
@media (max-width:640px){
header.top{padding:8px 12px;gap:8px 10px}
header.top .brand{font-size:15px}
/* Three links and Sign out must share one bar of a 360 px phone with the project's name. */
header.top .brand-name{display:none}
header.top{gap:8px}
header.top a.nav{margin-right:0;font-size:12px}
header.top button{padding:4px 8px}
header.top .project{min-width:4em}
main{padding:12px 10px 32px}
section.panel{padding:12px}
.toolbar h1{flex-basis:100%}
.quick{flex-wrap:wrap}
.picker{width:100%}
.picker label{flex:1 1 8em}
.picker input,.picker select{width:100%}
.picker select{max-width:none}
form.search input{min-width:0;flex:1}
.signin{margin:6vh auto;padding:20px}
td.tool bdi.name,td bdi.name{max-width:11em}
ul.insights .alert-me{flex-basis:100%;text-align:right}
}
#manage-rules details{border-top:1px solid #f2f4f7;padding:8px 0}
#manage-rules summary{cursor:pointer;font-size:13px}
`;

/** The pages' one script, run by the CSP nonce (app.ts): sortable tables, the client select, and a sign-in key taken out of the address bar. */
export const PAGE_SCRIPT = `
document.querySelectorAll("table.sortable").forEach(function(table){
  table.querySelectorAll("th[data-sort]").forEach(function(th, index){
    th.addEventListener("click", function(){
      var col = Array.prototype.indexOf.call(th.parentNode.children, th);
      var desc = !th.classList.contains("sorted-desc");
      table.querySelectorAll("th").forEach(function(h){ h.classList.remove("sorted-asc","sorted-desc"); });
      th.classList.add(desc ? "sorted-desc" : "sorted-asc");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var numeric = th.getAttribute("data-sort") === "num";
      rows.sort(function(a, b){
        var x = a.cells[col].getAttribute("data-value"), y = b.cells[col].getAttribute("data-value");
        if (numeric) {
          var nx = x === "" || x === null ? -Infinity : Number(x), ny = y === "" || y === null ? -Infinity : Number(y);
          return desc ? ny - nx : nx - ny;
        }
        return desc ? String(y).localeCompare(String(x)) : String(x).localeCompare(String(y));
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
});
document.querySelectorAll("[data-autosubmit]").forEach(function(el){
  el.addEventListener("change", function(){ el.form.submit(); });
});
document.querySelectorAll("[data-clean-url]").forEach(function(el){
  history.replaceState(null, "", el.getAttribute("data-clean-url"));
});
document.querySelectorAll(".scroll").forEach(function(box){
  var hint = document.createElement("p");
  hint.className = "scroll-hint";
  hint.setAttribute("data-scroll-hint", "");
  hint.textContent = "More columns: scroll the table sideways →";
  box.parentNode.insertBefore(hint, box);
  function update(){
    var wide = box.scrollWidth > box.clientWidth + 1;
    if (wide) hint.setAttribute("data-shown", ""); else hint.removeAttribute("data-shown");
    if (wide && box.scrollLeft + box.clientWidth < box.scrollWidth - 1) box.setAttribute("data-cut", ""); else box.removeAttribute("data-cut");
  }
  box.addEventListener("scroll", update, { passive: true });
  window.addEventListener("resize", update);
  update();
});
`;
