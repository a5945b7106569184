// The alerts page's admin forms (SPEC §5): plain HTML, and the one mapping from form fields to the
// admin API's JSON. It checks nothing; alerts/manage.ts does, so form and API refuse the same rules.
import type { FC } from "hono/jsx";
import type { AlertsReport } from "../alerts/report.ts";
import { ALERT_EVENTS, ALERT_METRICS, ALERT_OPS, DEFAULT_FOR_EVALUATIONS, DEFAULT_MIN_CALLS, DEFAULT_REPEAT_HOURS, DEFAULT_WINDOW_HOURS, DESTINATION_KINDS, MAX_ALERT_NAME_CHARS, MAX_DESTINATION_URL_CHARS } from "../alerts/rules.ts";
import type { SuggestedRule } from "../alerts/suggest.ts";
import { Name } from "./name.tsx";

/** A form as Hono's parseBody({ all: true }) gives it: a repeated field is a list. */
export type FormFields = Record<string, string | File | (string | File)[]>;

/** Text fields where blank means null: no name, no metric/event/op, the whole project. */
const NULL_WHEN_BLANK = ["name", "metric", "op", "event", "tool", "client"] as const;
/** Whole numbers that take their default (create) or stay as they are (edit) when blank. */
const DEFAULT_WHEN_BLANK = ["window_hours", "min_calls", "for_evaluations", "repeat_hours"] as const;

const isBlank = (v: unknown) => typeof v === "string" && v.trim() === "";
/** A number from a form's text; anything else goes through as it is for the schema to refuse (NaN, a list, a file). */
const asNumber = (v: string | File | (string | File)[]) => (typeof v === "string" ? Number(v) : v);

/**
 * The rule fields a form sends, as the admin API's JSON (CreateRuleBody / UpdateRuleBody). Only
 * fields the form has are set, so a form with fewer fields is a smaller PATCH; the destination
 * checkboxes always are (none ticked = no destinations).
 */
export function ruleInputFromForm(form: FormFields): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of NULL_WHEN_BLANK) {
    const v = form[field];
    if (v !== undefined) input[field] = isBlank(v) ? null : v;
  }
  const threshold = form.threshold;
  if (threshold !== undefined) input.threshold = isBlank(threshold) ? null : asNumber(threshold);
  for (const field of DEFAULT_WHEN_BLANK) {
    const v = form[field];
    if (v !== undefined && !isBlank(v)) input[field] = asNumber(v);
  }
  const destinations = form.destinations;
  input.destinations = destinations === undefined ? [] : Array.isArray(destinations) ? destinations : [destinations];
  return input;
}

/** The destination fields a form sends, as POST …/alert-destinations takes them (a blank name is none). */
export function destinationInputFromForm(form: FormFields): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of ["kind", "url", "name"] as const) {
    const v = form[field];
    if (v !== undefined && !(field === "name" && isBlank(v))) input[field] = v;
  }
  return input;
}

export type DestinationView = { id: string; kind: string; name: string | null; url_hint: string; created_at: string };
type RuleView = AlertsReport["rules"][number];
/** What a rule form starts with: a stored rule (edit), a suggestion (create from an insight) or nothing. */
type RuleValues = Partial<Pick<RuleView, "name" | "metric" | "op" | "threshold" | "event" | "window_hours" | "min_calls" | "tool" | "client" | "for_evaluations" | "repeat_hours" | "destinations">>;

export function suggestionValues(s: SuggestedRule): RuleValues {
  return "event" in s ? { name: s.name, event: s.event, tool: s.tool } : { name: s.name, metric: s.metric, op: s.op, threshold: s.threshold, tool: s.tool };
}

const Select: FC<{ name: string; label: string; options: readonly string[]; value: string | null | undefined }> = ({ name, label, options, value }) => (
  <label>
    {label}
    <select name={name}>
      <option value="" selected={!value}>—</option>
      {options.map((o) => <option value={o} selected={o === value}>{o}</option>)}
    </select>
  </label>
);

const NumberInput: FC<{ name: string; label: string; value: number | null | undefined; placeholder?: number; step?: string }> = ({ name, label, value, placeholder, step }) => (
  <label>
    {label}
    <input type="number" name={name} value={value === null || value === undefined ? "" : String(value)} placeholder={placeholder === undefined ? undefined : String(placeholder)} step={step ?? "1"} min="0" />
  </label>
);

/** Every rule field (docs/alerts.md's table), each blank for its default. */
export const RuleForm: FC<{ action: string; submit: string; values: RuleValues; destinations: DestinationView[]; id?: string }> = ({ action, submit, values, destinations, id }) => (
  <form method="post" action={action} class="rule-form" data-rule-form={id ?? "new"}>
    <label class="wide">
      Name
      <input type="text" name="name" value={values.name ?? ""} maxlength={MAX_ALERT_NAME_CHARS} placeholder="shown in notifications" />
    </label>
    <Select name="metric" label="Metric" options={ALERT_METRICS} value={values.metric} />
    <Select name="op" label="Op" options={ALERT_OPS} value={values.op} />
    <NumberInput name="threshold" label="Threshold" value={values.threshold} step="any" />
    <Select name="event" label="or event" options={ALERT_EVENTS} value={values.event} />
    <label>
      Tool
      <input type="text" name="tool" value={values.tool ?? ""} placeholder="blank: whole project, *: each" />
    </label>
    <label>
      Client
      <input type="text" name="client" value={values.client ?? ""} placeholder="blank: all, *: each" />
    </label>
    <NumberInput name="window_hours" label="Window (h)" value={values.window_hours} placeholder={DEFAULT_WINDOW_HOURS} />
    <NumberInput name="min_calls" label="Min calls" value={values.min_calls} placeholder={DEFAULT_MIN_CALLS} />
    <NumberInput name="for_evaluations" label="Evaluations in a row" value={values.for_evaluations} placeholder={DEFAULT_FOR_EVALUATIONS} />
    <NumberInput name="repeat_hours" label="Repeat (h)" value={values.repeat_hours} placeholder={DEFAULT_REPEAT_HOURS} />
    <fieldset class="wide">
      <legend>Notify</legend>
      {destinations.length === 0 ? <span class="muted">no destinations yet</span> : null}
      {destinations.map((d) => (
        <label class="check">
          <input type="checkbox" name="destinations" value={d.id} checked={values.destinations?.includes(d.id) ?? false} /> <Name text={d.name ?? d.id} /> <span class="muted">{d.kind}</span>
        </label>
      ))}
    </fieldset>
    <button type="submit">{submit}</button>
  </form>
);

export const DestinationForm: FC = () => (
  <form method="post" action="/alerts/destinations" class="rule-form" data-destination-form>
    <label>
      Kind
      <select name="kind">
        {DESTINATION_KINDS.map((k) => <option value={k}>{k}</option>)}
      </select>
    </label>
    <label class="wide">
      URL
      <input type="url" name="url" maxlength={MAX_DESTINATION_URL_CHARS} required placeholder="https://hooks.slack.com/services/…" autocomplete="off" />
    </label>
    <label>
      Name
      <input type="text" name="name" maxlength={MAX_ALERT_NAME_CHARS} placeholder="#mcp-alerts" />
    </label>
    <button type="submit">Add destination</button>
  </form>
);

/** A one-button form (delete, send test): the id is in the path, the button names what it does. */
export const ActionButton: FC<{ action: string; label: string; danger?: boolean }> = ({ action, label, danger }) => (
  <form method="post" action={action} class="inline">
    <button type="submit" class={danger ? "danger" : undefined}>{label}</button>
  </form>
);
