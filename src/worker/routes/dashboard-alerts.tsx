// The dashboard's alerts page and its admin side (SPEC §5): GET /alerts for every signed-in reader;
// admin sign-in and sign-out with ADMIN_TOKEN; and the forms a signed-in admin changes the
// project's rules and destinations with. Every form POST is same-origin only (hono/csrf: Origin or
// Sec-Fetch-Site, SPEC §3) and a form body, needs the read-key session (it names the project) and
// the admin session (it grants the change), and writes through alerts/manage.ts — the admin API's
// own schemas and service functions. Answers never echo what was sent.
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import {
  MANAGE_ERRORS,
  createDestination,
  createRule,
  destinationList,
  queueTestNotification,
  removeDestination,
  removeRule,
  updateRule,
  type ManageError,
  type Refusal,
} from "../alerts/manage.ts";
import { alertsReport, DELIVERY_LOG_LIMIT } from "../alerts/report.ts";
import { alertsPageQuery, ruleForInsight, type SuggestedRule } from "../alerts/suggest.ts";
import { destinationInputFromForm, ruleInputFromForm } from "../dashboard/alert-forms.tsx";
import { AlertsPage, type CreatedDestination } from "../dashboard/alerts-page.tsx";
import { AdminSignInPage, ErrorPage, SignInPage } from "../dashboard/layout.tsx";
import type { AppContext, AppEnv } from "../env.ts";
import { loadProjectName } from "../metrics/page-data.ts";
import { parseQuery } from "../metrics/query.ts";
import { openReadScope } from "../metrics/scope.ts";
import { ADMIN_PREFIX, adminPrefixRefusal, attemptOf, recordFailedCredential } from "../throttle/credentials.ts";
import { isProjectKeyShaped } from "../auth.ts";
import { isAdminToken } from "./admin.ts";
import { manageContext } from "./alerts.ts";
import { authenticatePage, render, safeNextPath, sameOriginForm, tooManySignIns, withBadParameters } from "./dashboard.tsx";
import { endAllAdminSessions, endSessions, hasAdminSession, readSession, startAdminSession } from "./dashboard-cookies.ts";

export const dashboardAlertsApp = new Hono<AppEnv>();

/** What a change did, by the `done` parameter its redirect carries: our sentences, chosen by an enum. */
const NOTICES = {
  rule_created: "Rule created. It is evaluated after the next rollup run.",
  rule_saved: "Rule saved.",
  rule_deleted: "Rule deleted, with its states.",
  destination_deleted: "Destination deleted.",
  test_queued: "Test notification queued: the next cron run sends it (see the delivery log).",
} as const;
type Notice = keyof typeof NOTICES;

const pageQuery = alertsPageQuery.extend({
  done: z.enum(Object.keys(NOTICES) as [Notice, ...Notice[]], { error: "'done' is not a change this page reports" }).optional(),
});

/** Why a change was refused, in words for the page. Field names are the schema's, never the input's. */
function refusalMessage(refusal: Refusal, what: "rule" | "destination"): string {
  const sentences: Record<ManageError, string> = {
    invalid_body:
      what === "rule"
        ? "The rule was not saved: a metric needs an op and a threshold in its range (rates 0–1), an event takes neither, and whole numbers must be within their limits (docs/alerts.md)."
        : "The destination was not added: choose a kind and give its URL.",
    unknown_destination: "The rule was not saved: one of its destinations no longer exists.",
    invalid_url: "The destination was not added: that is not a URL this worker can send to.",
    url_not_https: "The destination was not added: its URL must start with https://.",
    url_not_public: "The destination was not added: its host is a private, loopback, link-local or metadata address, which this worker never sends to.",
    no_such_project: "This project no longer exists.",
    no_such_rule: "That rule no longer exists.",
    no_such_destination: "That destination no longer exists.",
    too_many_rules: "The rule was not saved: a project has at most 100 rules.",
    too_many_destinations: "The destination was not added: a project has at most 20 destinations.",
    destination_in_use: "The destination was not deleted: a rule still notifies it. Remove it from the rule first.",
    project_moving: "Nothing was changed: the project is being moved to another database. Change its alerts when the move is done.",
  };
  const fields = refusal.fields?.length ? ` Check: ${refusal.fields.join(", ")}.` : "";
  return sentences[refusal.error] + fields;
}

/** The alerts page of `projectId`; the admin's forms when this browser holds an admin session. */
async function alertsPage(
  c: AppContext,
  projectId: string,
  db: D1Database,
  extra: { suggested?: SuggestedRule | null; notice?: string; error?: string; created?: CreatedDestination },
  status: 200 | 400 | 404 | 409 = 200,
): Promise<Response> {
  const scope = openReadScope(db, projectId);
  const admin = await hasAdminSession(c, Date.now());
  const [projectName, report, destinations] = await Promise.all([
    loadProjectName(scope),
    alertsReport(db, projectId, DELIVERY_LOG_LIMIT),
    admin ? destinationList(db, projectId) : Promise.resolve(null),
  ]);
  return render(
    c,
    <AlertsPage
      projectName={projectName}
      report={report}
      suggested={extra.suggested ?? null}
      origin={new URL(c.req.url).origin}
      admin={destinations ? { destinations } : null}
      notice={extra.notice}
      error={extra.error}
      created={extra.created}
    />,
    status,
  );
}

/** The alerts page (SPEC §5): rules, states and the delivery log; `?suggest=` from an insight; `?done=` after a change. */
dashboardAlertsApp.get("/alerts", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  return withBadParameters(c, async () => {
    const q = parseQuery(pageQuery, new URL(c.req.url));
    const suggested = q.suggest ? ruleForInsight(q.suggest, q.tool ?? null) : null;
    return alertsPage(c, auth.projectId, auth.db, { suggested, ...(q.done ? { notice: NOTICES[q.done] } : {}) });
  });
});

// ---------------------------------------------------------------------------------------------
// Admin sign-in
// ---------------------------------------------------------------------------------------------

/**
 * A form body only. hono/csrf checks Origin and Sec-Fetch-Site for the content types a cross-site
 * form can send; any other type (a script's JSON) is refused here, so nothing reaches a handler
 * unchecked.
 */
const formBodyOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i.test(c.req.header("content-type") ?? "")) {
    return render(c, <ErrorPage message="Send this from the dashboard's form." />, 415);
  }
  await next();
};

const ADMIN_HOME = "/alerts";

dashboardAlertsApp.get("/admin/signin", (c) => render(c, <AdminSignInPage />));

dashboardAlertsApp.post("/admin/signin", sameOriginForm, formBodyOnly, async (c) => {
  const form = await c.req.parseBody();
  const token = typeof form.token === "string" ? form.token : "";
  const next = form.next === undefined ? ADMIN_HOME : safeNextPath(form.next);
  // Throttled like the admin API's bearer token: the admin prefix's window is asked before the token
  // is compared; the network never refuses the right token (SPEC §3).
  const nowMs = Date.now();
  const page = (error: string) => <AdminSignInPage error={error} next={next} />;
  const before = await adminPrefixRefusal(c.env, c.req.raw, nowMs);
  if (before !== null) return tooManySignIns(c, before, page);
  if (token === "" || !(await isAdminToken(c.env, token))) {
    // A project key typed here by mistake is nobody's guess at the admin token: not counted.
    if (isProjectKeyShaped(token)) return render(c, page("That is a project key, not the admin token."), 401);
    const refusal = await recordFailedCredential(c.env, attemptOf(c.req.raw, ADMIN_PREFIX), nowMs);
    return refusal !== null ? tooManySignIns(c, refusal, page) : render(c, page("That is not the admin token."), 401);
  }
  await startAdminSession(c, nowMs);
  return c.redirect(next, 303);
});

/** Ends this browser's admin session on the server; the read session stays. */
dashboardAlertsApp.post("/admin/signout", sameOriginForm, formBodyOnly, async (c) => {
  await endSessions(c, ["admin"], Date.now());
  return c.redirect(ADMIN_HOME, 303);
});

/**
 * Ends every admin session in every browser, this one included, without changing ADMIN_TOKEN (for
 * a cookie that may have been copied). Only a signed-in admin may: anyone else is answered 403.
 */
dashboardAlertsApp.post("/admin/signout-everywhere", sameOriginForm, formBodyOnly, async (c) => {
  if (!(await hasAdminSession(c, Date.now()))) {
    return render(c, <ErrorPage message="Only a signed-in admin can sign out every admin." />, 403);
  }
  await endAllAdminSessions(c);
  return c.redirect(ADMIN_HOME, 303);
});

// ---------------------------------------------------------------------------------------------
// Management forms
// ---------------------------------------------------------------------------------------------

/**
 * The project is the read-key session's (a page only ever shows that one, SPEC §3); the right to
 * change it is the admin session's. No read session → 401 (sign in), a reader without one → 403.
 */
const requireDashboardAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  const nowMs = Date.now();
  const session = await readSession(c, nowMs);
  if (typeof session !== "object") return render(c, <SignInPage error="Sign in with the project's read key first." next={ADMIN_HOME} />, 401);
  if (!(await hasAdminSession(c, nowMs))) {
    return render(c, <ErrorPage message="Only a signed-in admin can change alerts. Sign in as admin on the alerts page." />, 403);
  }
  c.set("projectId", session.projectId);
  c.set("db", session.db);
  await next();
};

/** Mounted at /alerts: every POST below it passes the three checks first (GET /alerts is the page, above). */
const adminForms = new Hono<AppEnv>();
adminForms.post("*", sameOriginForm, formBodyOnly, requireDashboardAdmin);

/** A refusal as the alerts page with the reason on top, answered with the admin API's status for it. */
function refused(c: AppContext, refusal: Refusal, what: "rule" | "destination"): Promise<Response> {
  return alertsPage(c, c.var.projectId, c.var.db, { error: refusalMessage(refusal, what) }, MANAGE_ERRORS[refusal.error]);
}

const done = (c: AppContext, notice: Notice) => c.redirect(`${ADMIN_HOME}?done=${notice}`, 303);

adminForms.post("/rules", async (c) => {
  const outcome = await createRule(manageContext(c), c.var.projectId, ruleInputFromForm(await c.req.parseBody({ all: true })));
  return outcome.ok ? done(c, "rule_created") : refused(c, outcome, "rule");
});

adminForms.post("/rules/:rule", async (c) => {
  const outcome = await updateRule(manageContext(c), c.var.projectId, c.req.param("rule"), ruleInputFromForm(await c.req.parseBody({ all: true })));
  return outcome.ok ? done(c, "rule_saved") : refused(c, outcome, "rule");
});

adminForms.post("/rules/:rule/delete", async (c) => {
  const outcome = await removeRule(manageContext(c), c.var.projectId, c.req.param("rule"));
  return outcome.ok ? done(c, "rule_deleted") : refused(c, outcome, "rule");
});

/** Answered with the page itself, not a redirect: the webhook secret is shown this once and must not travel in a URL. */
adminForms.post("/destinations", async (c) => {
  const outcome = await createDestination(manageContext(c), c.var.projectId, destinationInputFromForm(await c.req.parseBody({ all: true })));
  if (!outcome.ok) return refused(c, outcome, "destination");
  return alertsPage(c, c.var.projectId, c.var.db, { created: outcome.value });
});

adminForms.post("/destinations/:dest/delete", async (c) => {
  const outcome = await removeDestination(manageContext(c), c.var.projectId, c.req.param("dest"));
  return outcome.ok ? done(c, "destination_deleted") : refused(c, outcome, "destination");
});

adminForms.post("/destinations/:dest/test", async (c) => {
  const outcome = await queueTestNotification(manageContext(c), c.var.projectId, c.req.param("dest"));
  return outcome.ok ? done(c, "test_queued") : refused(c, outcome, "destination");
});

dashboardAlertsApp.route("/alerts", adminForms);
