// What a notification says (SPEC §5): the facts every destination format is rendered from. The
// generic webhook sends exactly this object as its body.
import type { AlertEvent, AlertMetric, AlertOp } from "./rules.ts";
import type { NotificationKind } from "./state-machine.ts";

export type NotificationPayload = {
  /** firing, resolved, reminder (still firing, every repeat_hours) or test. */
  kind: NotificationKind;
  project: { id: string; name: string };
  rule: { id: string; name: string | null } | null;
  /** The (tool, client) the state belongs to; null = the whole project on that axis. */
  scope: { tool: string | null; client: string | null };
  /** The state after this notification: `firing` (firing, reminder) or `ok` (resolved, test). */
  state: "firing" | "ok";
  /** The rule's metric or event. */
  metric: AlertMetric | AlertEvent | null;
  op: AlertOp | null;
  value: number | null;
  threshold: number | null;
  /** The hours the figure covers: [from, to). */
  window: { hours: number; from: string; to: string } | null;
  /** The evaluation (or test) time. */
  at: string;
  /** The tool's dashboard page (the overview for a project-wide rule); null without PUBLIC_URL. */
  url: string | null;
};

/** The dashboard page of a scope, on the worker's public origin (`PUBLIC_URL`), or null without one. */
export function dashboardUrl(publicUrl: string | undefined, scope: { tool: string | null; client: string | null }): string | null {
  if (!publicUrl) return null;
  let base: URL;
  try {
    base = new URL(publicUrl);
  } catch {
    return null;
  }
  // A tool's page is /tool?name=… (names such as "." or ".." cannot be path segments).
  const url = new URL(scope.tool === null ? "/" : "/tool", base);
  if (scope.tool !== null) url.searchParams.set("name", scope.tool);
  if (scope.client !== null) url.searchParams.set("client", scope.client);
  return url.toString();
}

const RATE_METRICS: ReadonlySet<string> = new Set(["first_call_rate", "error_rate", "crash_rate", "bad_args_rate", "empty_rate"]);

/** A figure as a person reads it: rates as percentages, p95 in ms, calls as a count. */
export function formatFigure(metric: NotificationPayload["metric"], value: number | null): string {
  if (value === null) return "no figure";
  if (metric !== null && RATE_METRICS.has(metric)) return `${(value * 100).toFixed(1)}%`;
  if (metric === "p95_ms") return `${value} ms`;
  if (metric === "calls") return `${value} calls`;
  if (metric === "schema_regression") return `${value >= 0 ? "+" : ""}${(value * 100).toFixed(1)} points of bad_args`;
  return String(value);
}

const TITLES = { firing: "Firing", resolved: "Resolved", reminder: "Still firing", test: "Test notification" } as const;

export function titleOf(p: NotificationPayload): string {
  if (p.kind === "test") return `${TITLES.test} from MCPulse Edge`;
  return `${TITLES[p.kind]}: ${p.rule?.name ?? p.metric ?? "alert"}`;
}

/** One sentence: what, where, the figure against the threshold. Names are inserted raw; formats escape. */
export function summaryOf(p: NotificationPayload): string {
  if (p.kind === "test") return `This destination of project ${p.project.name} receives MCPulse Edge alerts.`;
  const where = p.scope.tool === null ? "the project" : p.scope.tool;
  const hours = p.window ? ` over the last ${p.window.hours} h` : "";
  switch (p.metric) {
    case "dead_tool":
      return p.scope.tool === null
        ? `${p.value ?? 0} registered tool(s) had no calls${hours}`
        : `${where} is registered but had no calls${hours}`;
    case "schema_regression":
      return `${where} regressed after its schema changed (${formatFigure(p.metric, p.value)})`;
    case "description_churn":
      return `${where} changed its description without a schema change${hours}`;
    default: {
      const figure = formatFigure(p.metric, p.value);
      const threshold = p.threshold === null ? "" : ` (threshold ${p.op ?? ""} ${formatFigure(p.metric, p.threshold)})`;
      return `${p.metric} of ${where} is ${figure}${threshold}${hours}`;
    }
  }
}
