// The alerts page (SPEC §5, docs/alerts.md): every rule with its state per scope and its last
// evaluation, and the delivery log — read only, for whoever holds the project's read key. Rules are
// managed through the admin API; an insight's "alert me on this" lands here with the rule it
// suggests, written out as the admin request that creates it.
import type { FC } from "hono/jsx";
import type { AlertsReport } from "../alerts/report.ts";
import type { SuggestedRule } from "../alerts/suggest.ts";
import { Document, TopBar } from "./layout.tsx";
import { Name } from "./name.tsx";


const when = (iso: string | null) => (iso ? iso.replace("T", " ").slice(0, 16) + " UTC" : "—");

function condition(rule: AlertsReport["rules"][number]): string {
  if (rule.event) return `event ${rule.event}`;
  return `${rule.metric} ${rule.op} ${rule.threshold}`;
}

function scopeLabel(tool: string | null, client: string | null): string {
  return [tool === null ? "whole project" : tool === "*" ? "each tool" : null, client === "*" ? "each client" : null].filter(Boolean).join(", ");
}

export const AlertsPage: FC<{ projectName: string; report: AlertsReport; suggested: SuggestedRule | null; origin: string }> = ({ projectName, report, suggested, origin }) => (
  <Document title={`Alerts · ${projectName}`}>
    <TopBar projectName={projectName} />
    <main>
      <div class="toolbar">
        <h1>
          Alerts
          <small data-as-of={report.as_of ?? ""}>evaluated after every rollup · data complete to {when(report.as_of)}</small>
        </h1>
      </div>
      {suggested ? (
        <section class="panel" id="suggested-rule">
          <h2>Alert me on this</h2>
          <p>
            Rules are created with the admin token (docs/alerts.md). This request creates the rule the insight
            suggests; add your destination ids (<code>GET /v1/admin/projects/:id/alert-destinations</code>).
          </p>
          <pre class="mono" data-suggested>{`curl -X POST "${origin}/v1/admin/projects/$PROJECT_ID/alert-rules" \\
  -H "Authorization: Bearer $ADMIN_TOKEN" -H "content-type: application/json" \\
  -d '${JSON.stringify({ ...suggested, destinations: ["$DESTINATION_ID"] }).replaceAll("'", "'\\''")}'`}</pre>
        </section>
      ) : null}
      <section class="panel" id="alert-rules">
        <h2>Rules</h2>
        {report.rules.length === 0 ? (
          <p class="empty-state">No alert rules yet. Create one with the admin API: docs/alerts.md.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>Rule</th>
                <th>Condition</th>
                <th>Window</th>
                <th>Scope</th>
                <th>State</th>
                <th>Since</th>
                <th class="num">Last figure</th>
                <th>Last evaluated</th>
              </tr>
            </thead>
            <tbody>
              {report.rules.flatMap((rule) => {
                const states = rule.states.length > 0 ? rule.states : [null];
                return states.map((s, i) => (
                  <tr data-rule={rule.id} data-state={s?.state ?? "none"}>
                    <td>{i === 0 ? <Name text={rule.name ?? rule.id} /> : ""}</td>
                    <td class="mono">{i === 0 ? condition(rule) : ""}</td>
                    <td>{i === 0 ? `${rule.window_hours} h, ≥ ${rule.min_calls} calls, ${rule.for_evaluations}× in a row` : ""}</td>
                    <td>
                      {s === null ? (
                        scopeLabel(rule.tool, rule.client) || "—"
                      ) : (
                        <>
                          {s.scope.tool === null ? "project" : <Name text={s.scope.tool} />}
                          {s.scope.client === null ? null : <> · <Name text={s.scope.client} /></>}
                        </>
                      )}
                    </td>
                    <td>{s === null ? <span class="muted">not evaluated yet</span> : <span class={`pill ${s.state === "firing" ? "high" : s.state === "pending" ? "medium" : "low"}`}>{s.state}</span>}</td>
                    <td>{when(s?.since ?? null)}</td>
                    <td class="num">{s?.value ?? "—"}</td>
                    <td>{when(s?.last_evaluated ?? null)}</td>
                  </tr>
                ));
              })}
            </tbody>
          </table>
        )}
      </section>
      <section class="panel" id="alert-deliveries">
        <h2>Delivery log</h2>
        {report.deliveries.length === 0 ? (
          <p class="empty-state">No notifications sent yet.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th>Queued</th>
                <th>Rule</th>
                <th>Kind</th>
                <th>Status</th>
                <th class="num">Attempts</th>
                <th>Last attempt</th>
                <th>Next attempt</th>
              </tr>
            </thead>
            <tbody>
              {report.deliveries.map((d) => {
                const last = d.attempts.at(-1);
                return (
                  <tr data-delivery={String(d.id)} data-status={d.status}>
                    <td>{when(d.created_at)}</td>
                    <td class="mono">{d.rule_id ?? "test"}</td>
                    <td>{d.kind}</td>
                    <td>{d.status}</td>
                    <td class="num">{d.attempts.length}</td>
                    <td>{last ? `${when(last.at)} · ${last.http_status ?? last.error_class ?? "—"} · ${last.latency_ms} ms` : "—"}</td>
                    <td>{d.status === "pending" ? when(d.next_attempt_at) : "—"}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
    </main>
  </Document>
);
