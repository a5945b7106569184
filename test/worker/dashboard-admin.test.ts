// The dashboard's admin side (SPEC §3, §5): sign-in with ADMIN_TOKEN (same-origin forms only, a
// signed cookie that never holds the token), and every management form on /alerts — accepted ones
// land where the admin API sees them, invalid ones write nothing and say why without echoing the
// input, and a reader (read-key cookie only) or another site is refused.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN_SESSION_MS } from "../../src/worker/routes/dashboard-cookies.ts";
import { admin, createDestination, createRule, statesOf } from "./alerts/helpers.ts";
import { adminHeaders, createProject, readSessionCookie } from "./helpers/projects.ts";

const READ_COOKIE = "mcpulse_session";
const ADMIN_COOKIE = "mcpulse_admin";
const ORIGIN = "http://worker";
type Fields = Record<string, string | string[]>;

function body(fields: Fields): URLSearchParams {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
  return params;
}

/** A form POST as a browser sends it from a page of `origin` (null: no Origin header), with these cookies. */
function post(path: string, fields: Fields, cookies: string[] = [], headers: Record<string, string> = { origin: ORIGIN }, host = ORIGIN): Promise<Response> {
  return exports.default.fetch(`${host}${path}`, {
    method: "POST",
    headers: { ...headers, ...(cookies.length ? { cookie: cookies.join("; ") } : {}) },
    body: body(fields),
    redirect: "manual",
  });
}

function page(path: string, cookies: string[]): Promise<Response> {
  return exports.default.fetch(`${ORIGIN}${path}`, { headers: cookies.length ? { cookie: cookies.join("; ") } : {}, redirect: "manual" });
}

/** The `name=value` of the Set-Cookie for `name`, as a browser would send it back. */
function cookieFrom(res: Response, name: string): string {
  const header = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!header) throw new Error(`no ${name} cookie set`);
  return header.split(";")[0]!;
}

async function signInAsAdmin(): Promise<string> {
  const res = await post("/admin/signin", { token: env.ADMIN_TOKEN! });
  expect(res.status).toBe(303);
  return cookieFrom(res, ADMIN_COOKIE);
}

/** A project, its read cookie, and an admin cookie: what a signed-in admin's browser holds. */
async function adminBrowser(name = "managed") {
  const project = await createProject(name);
  const read = await readSessionCookie(project.read_key);
  return { project, read, both: [read, await signInAsAdmin()] };
}

/** An admin cookie made by hand: the value signed with HMAC-SHA256 under `secret`, as hono/cookie signs. */
async function handMadeAdminCookie(value: string, secret: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const signature = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(value)))));
  return `${ADMIN_COOKIE}=${encodeURIComponent(`${value}.${signature}`)}`;
}

const listDestinations = async (projectId: string) =>
  (await (await admin("GET", `${projectId}/alert-destinations`)).json<{ destinations: { id: string; kind: string; name: string | null; url_hint: string }[] }>()).destinations;
const listRules = async (projectId: string) =>
  (await (await admin("GET", `${projectId}/alert-rules`)).json<{ rules: Record<string, unknown>[] }>()).rules;

const CROSS_SITE: [string, Record<string, string>][] = [
  ["evil origin", { origin: "https://evil.example" }],
  ["cross-site fetch metadata", { origin: "https://evil.example", "sec-fetch-site": "cross-site" }],
  ["same-site subdomain", { origin: "http://evil.worker", "sec-fetch-site": "same-site" }],
  ["opaque origin", { origin: "null" }],
  ["neither header", {}],
];

describe("admin sign-in", () => {
  it("takes ADMIN_TOKEN from a same-origin form: a signed, expiring HttpOnly cookie that does not hold the token", async () => {
    const res = await post("/admin/signin", { token: env.ADMIN_TOKEN! });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/alerts");
    const header = res.headers.getSetCookie().find((c) => c.startsWith(`${ADMIN_COOKIE}=`)) ?? "";
    expect(header).toMatch(/HttpOnly/);
    expect(header).toMatch(/Secure/);
    expect(header).toMatch(/SameSite=Strict/);
    expect(header).toMatch(/Path=\//);
    expect(header).toContain(`Max-Age=${ADMIN_SESSION_MS / 1000}`);
    expect(header).not.toContain(env.ADMIN_TOKEN!);
    expect(decodeURIComponent(header)).not.toContain(env.ADMIN_TOKEN!);
    // Fetch metadata alone is enough, and `next` is kept to this site.
    const bySecFetch = await post("/admin/signin", { token: env.ADMIN_TOKEN!, next: "//evil.example/x" }, [], { "sec-fetch-site": "same-origin" });
    expect(bySecFetch.status).toBe(303);
    expect(bySecFetch.headers.get("location")).toBe("/");
  });

  it("with the cookie, the alerts page shows the management forms; without it, none", async () => {
    const { read, both } = await adminBrowser();
    const asAdmin = await (await page("/alerts", both)).text();
    expect(asAdmin).toContain("data-admin-bar");
    expect(asAdmin).toContain('action="/alerts/rules"');
    expect(asAdmin).toContain('action="/alerts/destinations"');
    const asReader = await (await page("/alerts", [read])).text();
    expect(asReader).not.toContain("data-admin-bar");
    expect(asReader).not.toContain('action="/alerts/');
    expect(asReader.match(/<form/g)?.length).toBe(1); // sign-out only
    expect(asReader).toContain('href="/admin/signin"');
    // An admin session names no project: without the read-key session it is the sign-in page.
    expect((await page("/alerts", [both[1]!])).status).toBe(401);
  });

  it("refuses a wrong or empty token without echoing it, and sets no cookie", async () => {
    for (const token of ["wrong-token-<b>x</b>", "", env.ADMIN_TOKEN! + "x", env.ADMIN_TOKEN!.slice(0, -1)]) {
      const res = await post("/admin/signin", { token });
      expect(res.status, token).toBe(401);
      expect(res.headers.get("set-cookie"), token).toBeNull();
      const html = await res.text();
      expect(html).toContain("That is not the admin token.");
      if (token) expect(html).not.toContain(token.includes("<") ? "wrong-token" : token);
    }
  });

  it("never signs in or out for a request another site sends, nor for a non-form body", async () => {
    const { both } = await adminBrowser();
    for (const [name, headers] of CROSS_SITE) {
      for (const [path, fields] of [["/admin/signin", { token: env.ADMIN_TOKEN! }], ["/admin/signout", {}]] as const) {
        const res = await post(path, fields, both, headers);
        expect(res.status, `${name} ${path}`).toBe(403);
        expect(res.headers.get("set-cookie"), `${name} ${path}`).toBeNull();
      }
    }
    const json = await exports.default.fetch(`${ORIGIN}/admin/signin`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token: env.ADMIN_TOKEN }), redirect: "manual" });
    expect(json.status).toBe(415);
    expect(json.headers.get("set-cookie")).toBeNull();
  });

  it("signs out: admin sign-out clears the admin cookie, the project's sign-out clears both", async () => {
    const { both } = await adminBrowser();
    const out = await post("/admin/signout", {}, both);
    expect(out.status).toBe(303);
    expect(out.headers.getSetCookie()).toEqual([expect.stringMatching(new RegExp(`^${ADMIN_COOKIE}=;.*Max-Age=0`))]);
    const all = await post("/signout", {}, both);
    expect(all.status).toBe(303);
    const cleared = all.headers.getSetCookie();
    expect(cleared.some((c) => new RegExp(`^${READ_COOKIE}=;.*Max-Age=0`).test(c))).toBe(true);
    expect(cleared.some((c) => new RegExp(`^${ADMIN_COOKIE}=;.*Max-Age=0`).test(c))).toBe(true);
  });

  it("accepts only a live session's cookie, signed under the current ADMIN_TOKEN and not expired", async () => {
    const { project, read, both } = await adminBrowser();
    const value = decodeURIComponent(both[1]!.slice(ADMIN_COOKIE.length + 1));
    const [, id] = /^admin\.([0-9A-Za-z]{32})\.\d+\./.exec(value)!;
    const future = Date.now() + 3_600_000;
    const tryCookie = async (cookie: string) => (await post("/alerts/rules", { metric: "calls", op: "<", threshold: "5" }, [read, cookie])).status;
    expect(await tryCookie(both[1]!)).toBe(303);
    expect(await tryCookie(await handMadeAdminCookie(`admin.${id}.${future}`, env.ADMIN_TOKEN!))).toBe(303); // the same session, another expiry within it
    expect(await tryCookie(await handMadeAdminCookie(`admin.${id}.${Date.now() - 1000}`, env.ADMIN_TOKEN!))).toBe(403); // expired
    expect(await tryCookie(await handMadeAdminCookie(`admin.${id}.${Date.now() + 2 * ADMIN_SESSION_MS}`, env.ADMIN_TOKEN!))).toBe(403); // beyond a session
    expect(await tryCookie(await handMadeAdminCookie(`admin.${id}.${future}`, "another-token"))).toBe(403);
    expect(await tryCookie(await handMadeAdminCookie(`read.${id}.${future}`, env.ADMIN_TOKEN!))).toBe(403); // another kind
    expect(await tryCookie(await handMadeAdminCookie(`admin.${"A".repeat(32)}.${future}`, env.ADMIN_TOKEN!))).toBe(403); // a session the server never started
    expect(await tryCookie(`${ADMIN_COOKIE}=${encodeURIComponent(env.ADMIN_TOKEN!)}`)).toBe(403); // the raw token is no cookie
    expect(await listRules(project.project_id)).toHaveLength(2);
  });

  it("signing out as admin ends the session on the server: a saved copy of the cookie no longer manages rules", async () => {
    const { project, read, both } = await adminBrowser();
    const saved = both[1]!;
    const tryCookie = async (cookie: string) => (await post("/alerts/rules", { metric: "calls", op: "<", threshold: "5" }, [read, cookie])).status;
    expect(await tryCookie(saved)).toBe(303);
    expect((await post("/admin/signout", {}, both)).status).toBe(303);
    expect(await tryCookie(saved)).toBe(403);
    expect(await (await page("/alerts", [read, saved])).text()).not.toContain("data-admin-bar");
    // The project's sign-out ends both sessions: neither copy works afterwards.
    const again = await adminBrowser("again");
    expect((await post("/signout", {}, again.both)).status).toBe(303);
    expect((await page("/alerts", [again.read])).status).toBe(401);
    expect((await post("/alerts/rules", { metric: "calls", op: "<", threshold: "5" }, again.both)).status).toBe(401);
    expect(await listRules(project.project_id)).toHaveLength(1);
  });

  it("an admin ends every admin session without rotating ADMIN_TOKEN: from the alerts page, or DELETE /v1/admin/admin-sessions", async () => {
    const { read, both } = await adminBrowser();
    const other = await signInAsAdmin();
    const isAdmin = async (cookie: string) => (await (await page("/alerts", [read, cookie])).text()).includes("data-admin-bar");
    expect(await isAdmin(both[1]!)).toBe(true);
    expect(await isAdmin(other)).toBe(true);
    expect(await (await page("/alerts", both)).text()).toContain('action="/admin/signout-everywhere"');
    // A reader cannot; another site cannot.
    expect((await post("/admin/signout-everywhere", {}, [read])).status).toBe(403);
    expect((await post("/admin/signout-everywhere", {}, both, { origin: "https://evil.example" })).status).toBe(403);
    expect(await isAdmin(other)).toBe(true);
    const res = await post("/admin/signout-everywhere", {}, both);
    expect(res.status).toBe(303);
    expect(await isAdmin(both[1]!)).toBe(false);
    expect(await isAdmin(other)).toBe(false);
    // The read session stays, and the token still signs in.
    expect((await page("/alerts", [read])).status).toBe(200);
    const fresh = await signInAsAdmin();
    expect(await isAdmin(fresh)).toBe(true);
    // The admin API's route: ends them all and says how many.
    const second = await signInAsAdmin();
    const api = await exports.default.fetch("http://worker/v1/admin/admin-sessions", { method: "DELETE", headers: adminHeaders() });
    expect(api.status).toBe(200);
    expect((await api.json<{ ended: number }>()).ended).toBeGreaterThanOrEqual(2);
    expect(await isAdmin(fresh)).toBe(false);
    expect(await isAdmin(second)).toBe(false);
    expect((await exports.default.fetch("http://worker/v1/admin/admin-sessions", { method: "DELETE" })).status).toBe(401);
  });

  it("leaves Secure off on localhost, where development runs over http", async () => {
    const res = await post("/admin/signin", { token: env.ADMIN_TOKEN! }, [], { origin: "http://localhost:8787" }, "http://localhost:8787");
    expect(res.status).toBe(303);
    const header = res.headers.getSetCookie()[0] ?? "";
    expect(header).toMatch(/HttpOnly/);
    expect(header).not.toMatch(/Secure/);
  });
});

describe("management forms", () => {
  const RULE = { name: "tool failing", metric: "error_rate", op: ">", threshold: "0.2", tool: "*", client: "", window_hours: "", min_calls: "5", for_evaluations: "", repeat_hours: "" };

  it("every form POST is refused for a reader (403), without a session (401), and from another site (403), and writes nothing", async () => {
    const { project, read, both } = await adminBrowser();
    const dest = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/xxxxxxxxxxxxxxxx" });
    const rule = await createRule(project.project_id, { metric: "calls", op: "<", threshold: 1, destinations: [dest.id] });
    const forms: [string, Fields][] = [
      ["/alerts/rules", RULE],
      [`/alerts/rules/${rule.id}`, { name: "renamed" }],
      [`/alerts/rules/${rule.id}/delete`, {}],
      ["/alerts/destinations", { kind: "webhook", url: "https://example.com/hook" }],
      [`/alerts/destinations/${dest.id}/delete`, {}],
      [`/alerts/destinations/${dest.id}/test`, {}],
    ];
    const before = JSON.stringify([await listRules(project.project_id), await listDestinations(project.project_id)]);
    for (const [path, fields] of forms) {
      expect([path, (await post(path, fields, [read])).status]).toEqual([path, 403]);
      expect([path, (await post(path, fields, [])).status]).toEqual([path, 401]);
      expect([path, (await post(path, fields, [both[1]!])).status]).toEqual([path, 401]);
      for (const [name, headers] of CROSS_SITE) expect([path, name, (await post(path, fields, both, headers)).status]).toEqual([path, name, 403]);
    }
    expect(JSON.stringify([await listRules(project.project_id), await listDestinations(project.project_id)])).toBe(before);
    const log = await exports.default.fetch(`${ORIGIN}/v1/metrics/alerts`, { headers: { authorization: `Bearer ${project.read_key}` } });
    expect((await log.json<{ deliveries: unknown[] }>()).deliveries).toEqual([]); // no test queued either
  });

  it("adds a destination: the webhook secret once on the answer, then only the url_hint; an invalid one writes nothing and echoes nothing", async () => {
    const { project, both } = await adminBrowser();
    const url = "https://hooks.example.com/services/T0/B0/SECRETPATHabcd";
    const res = await post("/alerts/destinations", { kind: "webhook", url, name: "ops hook" }, both);
    expect(res.status).toBe(200);
    const html = await res.text();
    const secret = /data-secret[^>]*>(whsec_[0-9A-Za-z]+)</.exec(html)?.[1];
    expect(secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    expect(html).not.toContain("SECRETPATH");
    const [created] = await listDestinations(project.project_id);
    expect(created).toMatchObject({ kind: "webhook", name: "ops hook", url_hint: "https://hooks.example.com/…abcd" });
    const later = await (await page("/alerts", both)).text();
    expect(later).toContain(`data-destination="${created!.id}"`);
    expect(later).not.toContain(secret!);
    expect(later).not.toContain("SECRETPATH");

    const bad: [Fields, number, string][] = [
      [{ kind: "webhook", url: "http://plain.example/SECRETPATH2" }, 400, "https://"],
      [{ kind: "webhook", url: "not a url SECRETPATH3" }, 400, "not a URL"],
      [{ kind: "webhook", url: "https://169.254.169.254/SECRETPATH5" }, 400, "metadata address"],
      [{ kind: "slack", url: "https://[::ffff:10.0.0.1]/SECRETPATH6" }, 400, "private, loopback"],
      [{ kind: "ZZKIND", url: "https://example.com/SECRETPATH4" }, 400, "choose a kind"],
      [{ kind: "slack" }, 400, "choose a kind"],
    ];
    for (const [fields, status, says] of bad) {
      const r = await post("/alerts/destinations", fields, both);
      expect(r.status).toBe(status);
      const text = await r.text();
      expect(text).toContain(says);
      expect(text).not.toContain("SECRETPATH");
      expect(text).not.toContain("ZZKIND");
    }
    expect(await listDestinations(project.project_id)).toHaveLength(1);
  });

  it("queues a test notification to a destination of the project only", async () => {
    const { project, both } = await adminBrowser();
    const other = await createProject("other");
    const mine = await createDestination(project.project_id, { kind: "discord", url: "https://discord.com/api/webhooks/1/abcdefghijklmnop" });
    const theirs = await createDestination(other.project_id, { kind: "discord", url: "https://discord.com/api/webhooks/2/abcdefghijklmnop" });
    const res = await post(`/alerts/destinations/${mine.id}/test`, {}, both);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/alerts?done=test_queued");
    expect(await (await page("/alerts?done=test_queued", both)).text()).toContain("Test notification queued");
    expect((await post(`/alerts/destinations/${theirs.id}/test`, {}, both)).status).toBe(404);
    const log = async (key: string) =>
      (await (await exports.default.fetch(`${ORIGIN}/v1/metrics/alerts`, { headers: { authorization: `Bearer ${key}` } })).json<{ deliveries: { kind: string; destination_id: string }[] }>()).deliveries;
    expect((await log(project.read_key)).map((d) => [d.kind, d.destination_id])).toEqual([["test", mine.id]]);
    expect(await log(other.read_key)).toEqual([]);
  });

  it("deletes a destination no rule uses; one in use (409) or another project's (404) stays", async () => {
    const { project, both } = await adminBrowser();
    const other = await createProject("other");
    const used = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/usedusedusedused" });
    const free = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/freefreefreefree" });
    const theirs = await createDestination(other.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/theirstheirsthei" });
    await createRule(project.project_id, { metric: "calls", op: "<", threshold: 1, destinations: [used.id] });
    const inUse = await post(`/alerts/destinations/${used.id}/delete`, {}, both);
    expect(inUse.status).toBe(409);
    expect(await inUse.text()).toContain("a rule still notifies it");
    expect((await post(`/alerts/destinations/${theirs.id}/delete`, {}, both)).status).toBe(404);
    const ok = await post(`/alerts/destinations/${free.id}/delete`, {}, both);
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/alerts?done=destination_deleted");
    expect((await listDestinations(project.project_id)).map((d) => d.id)).toEqual([used.id]);
    expect((await listDestinations(other.project_id)).map((d) => d.id)).toEqual([theirs.id]);
  });

  it("creates a rule: blank fields take the API's defaults, ticked destinations are notified", async () => {
    const { project, both } = await adminBrowser();
    const a = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/aaaaaaaaaaaaaaaa" });
    const b = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/bbbbbbbbbbbbbbbb" });
    const res = await post("/alerts/rules", { ...RULE, destinations: [a.id, b.id] }, both);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/alerts?done=rule_created");
    const [rule] = await listRules(project.project_id);
    expect(rule).toMatchObject({
      name: "tool failing", metric: "error_rate", op: ">", threshold: 0.2, event: null, tool: "*", client: null,
      window_hours: 24, min_calls: 5, for_evaluations: 2, repeat_hours: 24, destinations: [a.id, b.id], states: [],
    });
    const listed = await (await page("/alerts", both)).text();
    expect(listed).toContain(`data-rule="${rule!.id}"`);
    expect(listed).toContain(`data-edit-rule="${rule!.id}"`);
    // An event rule: no op, no threshold.
    expect((await post("/alerts/rules", { event: "dead_tool", metric: "", op: "", threshold: "", tool: "*" }, both)).status).toBe(303);
    expect((await listRules(project.project_id)).map((r) => r.event)).toEqual([null, "dead_tool"]);
  });

  it("refuses an invalid rule with the fields to check, never the input, and writes nothing", async () => {
    const { project, both } = await adminBrowser();
    const other = await createProject("other");
    const theirs = await createDestination(other.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/theirstheirsthei" });
    const evil = "<script>alert(1)</script>ZZECHO";
    const cases: [Fields, number, string][] = [
      [{ ...RULE, name: evil, threshold: "2" }, 400, "Check: threshold."],
      [{ ...RULE, name: evil, op: "" }, 400, "Check: op."],
      [{ ...RULE, name: evil, threshold: "a lot" }, 400, "Check: threshold."],
      [{ ...RULE, name: evil, window_hours: "169" }, 400, "Check: window_hours."],
      [{ ...RULE, name: evil, event: "dead_tool" }, 400, "Check: metric, op."],
      [{ ...RULE, name: "x".repeat(201) }, 400, "Check: name."],
      [{ ...RULE, name: evil, metric: "latency" + evil }, 400, "Check: metric."],
      [{ ...RULE, name: evil, destinations: ["dst_0000000000000000"] }, 400, "no longer exists"],
      [{ ...RULE, name: evil, destinations: [theirs.id] }, 400, "no longer exists"],
      [{ ...RULE, name: evil, destinations: "not-an-id" + evil }, 400, "Check: destinations."],
      [{ ...RULE, name: [evil, evil] }, 400, "Check: name."],
    ];
    for (const [fields, status, says] of cases) {
      const res = await post("/alerts/rules", fields, both);
      const html = await res.text();
      expect([JSON.stringify(fields).slice(0, 80), res.status]).toEqual([JSON.stringify(fields).slice(0, 80), status]);
      expect(html).toContain("The rule was not saved");
      expect(html).toContain(says);
      expect(html).not.toContain("ZZECHO");
      expect(html).not.toContain("x".repeat(201));
    }
    expect(await listRules(project.project_id)).toEqual([]);
  });

  it("edits with PATCH semantics: given fields change, the rest stays; states survive a rename and reset on a new threshold", async () => {
    const { project, both } = await adminBrowser();
    const dest = await createDestination(project.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T/B/cccccccccccccccc" });
    const rule = await createRule(project.project_id, { name: "errors", metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 7, destinations: [dest.id] });
    await env.DB.prepare(
      `INSERT INTO alert_states (rule_id, scope_key, project_id, scope_tool, scope_client, state, breaches, since_ms, value, last_evaluated_ms, last_notified_ms, revision, eval_id)
       VALUES (?1, '["search",null]', ?2, 'search', NULL, 'firing', 3, 0, 0.5, 0, 0, 3, 'x')`,
    ).bind(rule.id, project.project_id).run();
    const get = async () => (await admin("GET", `${project.project_id}/alert-rules/${rule.id}`)).json<Record<string, unknown> & { states: unknown[] }>();

    // A form with only the name: only the name changes (the destination list is a checkbox set, so it is always sent).
    expect((await post(`/alerts/rules/${rule.id}`, { name: "renamed", destinations: [dest.id] }, both)).status).toBe(303);
    expect(await get()).toMatchObject({ name: "renamed", threshold: 0.1, min_calls: 7, tool: "*", destinations: [dest.id], states: [{ state: "firing" }] });

    // The whole edit form as the page fills it, unchanged but for the name: states kept.
    const full = { name: "renamed again", metric: "error_rate", op: ">", threshold: "0.1", event: "", tool: "*", client: "", window_hours: "24", min_calls: "7", for_evaluations: "2", repeat_hours: "24", destinations: [dest.id] };
    expect((await post(`/alerts/rules/${rule.id}`, full, both)).status).toBe(303);
    expect((await get()).states).toHaveLength(1);

    // Invalid: nothing changes.
    const bad = await post(`/alerts/rules/${rule.id}`, { ...full, op: "" }, both);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("Check: op.");
    expect(await get()).toMatchObject({ name: "renamed again", op: ">", states: [{ state: "firing" }] });

    // A new threshold and no destinations ticked: states start again from ok.
    const { destinations: _ticked, ...unticked } = full;
    expect((await post(`/alerts/rules/${rule.id}`, { ...unticked, threshold: "0.3" }, both)).status).toBe(303);
    expect(await get()).toMatchObject({ threshold: 0.3, destinations: [], states: [] });
    expect(await statesOf(project.project_id)).toEqual([]);
    expect((await post("/alerts/rules/rul_0000000000000000", { name: "x" }, both)).status).toBe(404);
  });

  it("deletes a rule of the project only", async () => {
    const { project, both } = await adminBrowser();
    const other = await createProject("other");
    const mine = await createRule(project.project_id, { metric: "calls", op: "<", threshold: 1 });
    const theirs = await createRule(other.project_id, { metric: "calls", op: "<", threshold: 1 });
    expect((await post(`/alerts/rules/${theirs.id}/delete`, {}, both)).status).toBe(404);
    const res = await post(`/alerts/rules/${mine.id}/delete`, {}, both);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/alerts?done=rule_deleted");
    expect((await admin("GET", `${project.project_id}/alert-rules/${mine.id}`)).status).toBe(404);
    expect((await admin("GET", `${other.project_id}/alert-rules/${theirs.id}`)).status).toBe(200);
  });

  it("prefills the new-rule form from an insight's suggestion for an admin", async () => {
    const { both } = await adminBrowser();
    const html = await (await page(`/alerts?suggest=slow_calls&tool=${encodeURIComponent("search <orders>")}`, both)).text();
    expect(html).toContain("New rule (suggested by the insight)");
    expect(html).toMatch(/<option value="p95_ms" selected="">/);
    expect(html).toContain('name="tool" value="search &lt;orders&gt;"');
    expect(html).not.toContain("curl -X POST");
    expect((await page("/alerts?done=%3Cscript%3E", both)).status).toBe(400);
  });
});
