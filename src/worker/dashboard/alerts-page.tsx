// The alerts page (SPEC §5, docs/alerts.md): rules, states and the delivery log for a read key; the
// forms (alert-forms.tsx) for a signed-in admin.
import type { FC } from "hono/jsx";
import type { AlertsReport } from "../alerts/report.ts";
import type { SuggestedRule } from "../alerts/suggest.ts";
import { ActionButton, DestinationForm, RuleForm, suggestionValues, type DestinationView } from "./alert-forms.tsx";
import { Document, TopBar } from "./layout.tsx";
import { Name } from "./name.tsx";

/** What only a signed-in admin sees: the project's destinations (never a URL: url_hint only). */
export type AdminView = { destinations: DestinationView[] };
/** A destination just created: its webhook secret is shown this once and never again. */
export type CreatedDestination = { id: string; name: string | null; kind: string; url_hint: string; secret: string | null };

export type AlertsPageProps = {
  projectName: string;
  report: AlertsReport;
  suggested: SuggestedRule | null;
  origin: string;
  admin: AdminView | null;
  /** What the last change did, or why it was refused: fixed sentences of ours, never the input. */
  notice?: string | undefined;
  error?: string | undefined;
  created?: CreatedDestination | undefined;
};


const when = (iso: string | null) => (iso ? iso.replace("T", " ").slice(0, 16) + " UTC" : "—");

function condition(rule: AlertsReport["rules"][number]): string {
  if (rule.event) return `event ${rule.event}`;
  return `${rule.metric} ${rule.op} ${rule.threshold}`;
}

/** A destination as a person names it: its kind's own name, then the name it was given. */
export const DESTINATION_KINDS: Record<string, string> = { slack: "Slack", discord: "Discord", webhook: "Webhook" };

type Delivery = AlertsReport["deliveries"][number];
type Rule = AlertsReport["rules"][number];
type ScopeState = Rule["states"][number];

/**
 * A metric rule's scope with no figure was not evaluated: fewer calls than min_calls in its window
 * (SPEC §5; the state machine keeps no figure then). `calls` is always evaluated, and an event rule's
 * figure may be absent by nature.
 */
export function notEvaluated(rule: Rule, s: ScopeState): boolean {
  return rule.metric !== null && rule.metric !== "calls" && s.value === null;
}

const DestinationCell: FC<{ d: Delivery }> = ({ d }) =>
  d.destination_kind === null ? (
    <span class="muted">deleted destination</span>
  ) : (
    <>
      <b>{DESTINATION_KINDS[d.destination_kind] ?? d.destination_kind}</b>
      {d.destination_name ? <> · <Name text={d.destination_name} /></> : null}
    </>
  );

const RuleCell: FC<{ d: Delivery; rules: Rule[] }> = ({ d, rules }) => {
  if (d.rule_id === null) return <span class="muted">test notification</span>;
  if (d.rule_name !== null) return <Name text={d.rule_name} />;
  const rule = rules.find((r) => r.id === d.rule_id);
  return rule ? <span class="mono">{condition(rule)}</span> : <span class="muted">deleted rule</span>;
};

const ScopeCell: FC<{ scope: { tool: string | null; client: string | null } | null }> = ({ scope }) =>
  scope === null ? (
    <span class="muted">—</span>
  ) : (
    <>
      {scope.tool === null ? "project" : <Name text={scope.tool} />}
      {scope.client === null ? null : <> · <Name text={scope.client} /></>}
    </>
  );

/** Scopes listed per rule: a rule over each of thousands of tools keeps the page bounded (SPEC §3). */
export const SCOPES_SHOWN = 20;

/**
 * The scopes of a rule the page lists: firing first, then pending, then the evaluated ok ones, then
 * those not evaluated; by tool and client within each; at most SCOPES_SHOWN (the row after them
 * counts the rest by state).
 */
export function shownStates(rule: Rule): ScopeState[] {
  const rank = (s: ScopeState) => (s.state === "firing" ? 0 : s.state === "pending" ? 1 : notEvaluated(rule, s) ? 3 : 2);
  const key = (s: ScopeState) => `${s.scope.tool ?? ""}\u0000${s.scope.client ?? ""}`;
  const sorted = [...rule.states].sort((a, b) => rank(a) - rank(b) || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return sorted.slice(0, SCOPES_SHOWN);
}

/** The scopes a rule's list leaves out, counted by what they show. */
function hiddenSummary(rule: Rule, shown: number): string {
  const rest = [...rule.states]
    .map((s) => (notEvaluated(rule, s) ? "not evaluated" : s.state))
    .sort((a, b) => ["firing", "pending", "ok", "not evaluated"].indexOf(a) - ["firing", "pending", "ok", "not evaluated"].indexOf(b))
    .slice(shown);
  const counts = new Map<string, number>();
  for (const label of rest) counts.set(label, (counts.get(label) ?? 0) + 1);
  return [...counts].map(([label, n]) => `${n.toLocaleString("en-US")} ${label}`).join(", ");
}

function scopeLabel(tool: string | null, client: string | null): string {
  return [tool === null ? "whole project" : tool === "*" ? "each tool" : null, client === "*" ? "each client" : null].filter(Boolean).join(", ");
}

export const AlertsPage: FC<AlertsPageProps> = ({ projectName, report, suggested, origin, admin, notice, error, created }) => (
  <Document title={`Alerts · ${projectName}`}>
    <TopBar projectName={projectName} />
    <main>
      <div class="toolbar">
        <h1>
          Alerts
          <small data-as-of={report.as_of ?? ""}>evaluated after every rollup · data complete to {when(report.as_of)}</small>
        </h1>
        {admin ? (
          <div class="admin-bar" data-admin-bar>
            <span class="pill medium">admin</span>
            <form method="post" action="/admin/signout" class="inline">
              <button type="submit">Sign out as admin</button>
            </form>
            <form method="post" action="/admin/signout-everywhere" class="inline">
              <button type="submit" title="Ends every admin session, in every browser; ADMIN_TOKEN stays as it is">Sign out every admin</button>
            </form>
          </div>
        ) : null}
      </div>
      {error ? <div class="error" role="alert" data-error>{error}</div> : null}
      {notice ? <div class="notice" role="status" data-notice>{notice}</div> : null}
      {created ? (
        <section class="panel" id="created-destination">
          <h2>Destination added</h2>
          <p>
            <Name text={created.name ?? created.id} /> ({created.kind}, <span class="mono">{created.url_hint}</span>). Its URL is not shown again.
          </p>
          {created.secret ? (
            <p>
              Signing secret — copy it now, it is shown only this once (docs/alerts.md, verifying a webhook):{" "}
              <code class="mono" data-secret>{created.secret}</code>
            </p>
          ) : null}
        </section>
      ) : null}
      {suggested && !admin ? (
        <section class="panel" id="suggested-rule">
          <h2>Alert me on this</h2>
          <p>
            Rules are created by an admin: on this page after <a href="/admin/signin">admin sign-in</a>, or with
            this request, which creates the rule the insight suggests; add your destination ids
            (<code>GET /v1/admin/projects/:id/alert-destinations</code>).
          </p>
          <pre class="mono" data-suggested>{`curl -X POST "${origin}/v1/admin/projects/$PROJECT_ID/alert-rules" \\
  -H "Authorization: Bearer $ADMIN_TOKEN" -H "content-type: application/json" \\
  -d '${JSON.stringify({ ...suggested, destinations: ["$DESTINATION_ID"] }).replaceAll("'", "'\\''")}'`}</pre>
        </section>
      ) : null}
      <section class="panel" id="alert-rules">
        <h2>Rules</h2>
        {report.rules.length === 0 ? (
          <p class="empty-state">{admin ? "No alert rules yet. Create one below." : "No alert rules yet. An admin creates them here or with the admin API: docs/alerts.md."}</p>
        ) : (
          <div class="scroll">
          <table>
            <thead>
              <tr>
                <th>Rule</th>
                <th>Scope</th>
                <th>State</th>
                <th class="num">Last figure</th>
                <th>Condition</th>
                <th>Window</th>
                <th>Since</th>
                <th>Last evaluated</th>
              </tr>
            </thead>
            <tbody>
              {report.rules.flatMap((rule) => {
                const shown = shownStates(rule);
                const states = shown.length > 0 ? shown : [null];
                const hidden = rule.states.length - shown.length;
                const rows = states.map((s, i) => (
                  <tr data-rule={rule.id} data-state={s?.state ?? "none"}>
                    <td>{i === 0 ? <Name text={rule.name ?? rule.id} /> : ""}</td>
                    <td>{s === null ? scopeLabel(rule.tool, rule.client) || "—" : <ScopeCell scope={s.scope} />}</td>
                    <td>
                      {s === null ? (
                        <span class="muted">not evaluated yet</span>
                      ) : notEvaluated(rule, s) ? (
                        <span class="muted" data-not-evaluated>not evaluated: fewer than {rule.min_calls.toLocaleString("en-US")} calls</span>
                      ) : (
                        <span class={`pill ${s.state === "firing" ? "high" : s.state === "pending" ? "medium" : "low"}`}>{s.state}</span>
                      )}
                    </td>
                    <td class="num">{s?.value ?? "—"}</td>
                    <td class="mono">{i === 0 ? condition(rule) : ""}</td>
                    <td>{i === 0 ? `${rule.window_hours} h, ≥ ${rule.min_calls} calls, ${rule.for_evaluations}× in a row` : ""}</td>
                    <td>{when(s?.since ?? null)}</td>
                    <td>{when(s?.last_evaluated ?? null)}</td>
                  </tr>
                ));
                if (hidden > 0) {
                  rows.push(
                    <tr data-rule={rule.id} data-more-scopes={String(hidden)}>
                      <td colspan={8} class="muted" style="white-space:normal">
                        …and {hidden.toLocaleString("en-US")} more scopes ({hiddenSummary(rule, shown.length)}) — GET /v1/metrics/alerts lists them all
                      </td>
                    </tr>,
                  );
                }
                return rows;
              })}
            </tbody>
          </table>
          </div>
        )}
      </section>
      {admin ? <AdminPanels report={report} admin={admin} suggested={suggested} /> : null}
      <section class="panel" id="alert-deliveries">
        <h2>Delivery log</h2>
        {report.deliveries.length === 0 ? (
          <p class="empty-state">No notifications sent yet.</p>
        ) : (
          <div class="scroll">
          <table>
            <thead>
              <tr>
                <th>Queued</th>
                <th>Rule</th>
                <th>Scope</th>
                <th>Destination</th>
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
                    <td data-rule-cell><RuleCell d={d} rules={report.rules} /></td>
                    <td><ScopeCell scope={d.scope} /></td>
                    <td data-destination-cell><DestinationCell d={d} /></td>
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
          </div>
        )}
      </section>
      {admin ? null : (
        <footer class="foot">
          Rules and destinations are managed by an admin: <a href="/admin/signin" data-admin-signin>admin sign-in</a>
        </footer>
      )}
    </main>
  </Document>
);

/** The admin's forms: a new rule, each rule's edit and delete, the destinations with test and delete, a new destination. */
const AdminPanels: FC<{ report: AlertsReport; admin: AdminView; suggested: SuggestedRule | null }> = ({ report, admin, suggested }) => (
  <>
    <section class="panel" id="manage-rules">
      <h2>Manage rules <small>blank fields take their defaults (docs/alerts.md)</small></h2>
      <details open={suggested !== null || report.rules.length === 0} data-new-rule>
        <summary>{suggested ? "New rule (suggested by the insight)" : "New rule"}</summary>
        <RuleForm action="/alerts/rules" submit="Create rule" values={suggested ? suggestionValues(suggested) : {}} destinations={admin.destinations} />
      </details>
      {report.rules.map((rule) => (
        <details data-edit-rule={rule.id}>
          <summary>
            Edit <Name text={rule.name ?? rule.id} />
          </summary>
          <RuleForm action={`/alerts/rules/${rule.id}`} submit="Save rule" values={rule} destinations={admin.destinations} id={rule.id} />
          <ActionButton action={`/alerts/rules/${rule.id}/delete`} label="Delete rule" danger />
        </details>
      ))}
    </section>
    <section class="panel" id="alert-destinations">
      <h2>Destinations <small>URLs are never shown after they are added</small></h2>
      {admin.destinations.length === 0 ? (
        <p class="empty-state">No destinations yet.</p>
      ) : (
        <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Kind</th>
              <th>URL</th>
              <th>Added</th>
              <th></th>
            </tr>
          </thead>
          <tbody>
            {admin.destinations.map((d) => (
              <tr data-destination={d.id}>
                <td><Name text={d.name ?? d.id} /></td>
                <td>{d.kind}</td>
                <td class="mono">{d.url_hint}</td>
                <td>{when(d.created_at)}</td>
                <td>
                  <ActionButton action={`/alerts/destinations/${d.id}/test`} label="Send test" />
                  <ActionButton action={`/alerts/destinations/${d.id}/delete`} label="Delete" danger />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      <DestinationForm />
    </section>
  </>
);
