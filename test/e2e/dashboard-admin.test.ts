// Managing alerts on the dashboard in real headless Chromium (SPEC §5): a reader signs in with the
// read key, then as admin with ADMIN_TOKEN; through the page's own forms adds a webhook destination
// (its secret shown once), creates a rule notifying it, sees the rule listed and, after a cron run,
// its state; then deletes the rule and the destination. A reader's page has none of these forms,
// and nothing breaks the CSP.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { WIDTHS, measureLayout } from "./dashboard/layout-checks.ts";
import { LONG_PROJECT_NAME, LONG_TOOLS, ingestAndRollup, longNamesWorkload, ofLength } from "./dashboard/long-names.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

// As in dashboard.test.ts: screenshots go to the ignored test-results/ unless `npm run screenshots`.
const SCREENSHOTS = join(fileURLToPath(new URL("../../", import.meta.url)), process.env.SCREENSHOTS_DIR ?? "test-results/screenshots", "/");

const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

let worker: RunningWorker;
let browser: Browser;
let receiver: Server;
let receiverUrl = "";
const received: { path: string; body: string }[] = [];

async function adminApi(path: string) {
  const res = await fetch(`${worker.url}/v1/admin/projects/${path}`, { headers: { authorization: `Bearer ${worker.adminToken}` } });
  expect(res.status).toBe(200);
  return res.json() as Promise<Record<string, { id: string; name: string | null }[]>>;
}

beforeAll(async () => {
  receiver = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      received.push({ path: req.url ?? "", body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  // LOCAL_DEV: the destination may be this machine's plain-http receiver.
  worker = await startWorker({ vars: { LOCAL_DEV: "true" } });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  receiver?.closeAllConnections();
  if (receiver) await new Promise((resolve) => receiver.close(resolve));
});

describe("alerts managed on the dashboard", () => {
  it("an admin signs in, adds a destination and a rule through the forms, sees its state, and deletes both", async () => {
    const project = await createProject(worker, "shop");
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    await context.addInitScript(`
      globalThis.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) => globalThis.cspViolations.push(e.violatedDirective + " " + e.blockedURI));
    `);
    const page = await context.newPage();

    // A reader: the rules and log, no management form, a link to the admin sign-in.
    await page.goto(`${worker.url}/alerts?key=${project.read_key}`);
    await page.click('form[action="/signin"] button[type="submit"]');
    await page.waitForSelector("#alert-rules");
    expect(await page.locator('form[action^="/alerts/"]').count()).toBe(0);
    await page.click("a[data-admin-signin]");

    // The admin sign-in: a wrong token is refused, the right one comes back to the alerts page.
    await page.fill('input[name="token"]', "not-the-token");
    await page.click('form[action="/admin/signin"] button');
    expect(await page.textContent('[role="alert"]')).toContain("That is not the admin token.");
    await page.fill('input[name="token"]', worker.adminToken);
    await page.click('form[action="/admin/signin"] button');
    await page.waitForSelector("[data-admin-bar]");
    expect(new URL(page.url()).pathname).toBe("/alerts");
    const adminCookie = (await context.cookies(worker.url)).find((c) => c.name === "mcpulse_admin");
    expect(adminCookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(adminCookie!.value).not.toContain(worker.adminToken);

    // A destination: the secret once, then a url_hint only.
    await page.selectOption('form[data-destination-form] select[name="kind"]', "webhook");
    await page.fill('form[data-destination-form] input[name="url"]', `${receiverUrl}/hooks/mcpulse-ops-hook`);
    await page.fill('form[data-destination-form] input[name="name"]', "ops hook");
    await page.click('form[data-destination-form] button[type="submit"]');
    const secret = await page.textContent("[data-secret]");
    expect(secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    const { destinations } = await adminApi(`${project.project_id}/alert-destinations`);
    expect(destinations!.map((d) => d.name)).toEqual(["ops hook"]);
    const destinationId = destinations![0]!.id;
    await page.goto(`${worker.url}/alerts`);
    expect(await page.locator(`tr[data-destination="${destinationId}"]`).count()).toBe(1);
    expect(await page.content()).not.toContain(secret!);
    expect(await page.content()).not.toContain("mcpulse-ops-hook");

    // A rule: whole-project traffic under 1,000 calls, firing at the first breach; blank fields take their defaults.
    const form = page.locator('form[data-rule-form="new"]');
    await form.locator('input[name="name"]').fill("traffic drop");
    await form.locator('select[name="metric"]').selectOption("calls");
    await form.locator('select[name="op"]').selectOption("<");
    await form.locator('input[name="threshold"]').fill("1000");
    await form.locator('input[name="for_evaluations"]').fill("1");
    await form.locator(`input[name="destinations"][value="${destinationId}"]`).check();
    await form.locator('button[type="submit"]').click();
    await page.waitForSelector("[data-notice]");
    expect(await page.textContent("[data-notice]")).toContain("Rule created");
    const { rules } = await adminApi(`${project.project_id}/alert-rules`);
    expect(rules).toHaveLength(1);
    const ruleId = rules![0]!.id;
    expect(rules![0]).toMatchObject({ name: "traffic drop", metric: "calls", op: "<", threshold: 1000, for_evaluations: 1, window_hours: 24, destinations: [destinationId] });
    expect(await page.getAttribute(`tr[data-rule="${ruleId}"]`, "data-state")).toBe("none");

    // A cron run evaluates it: no calls at all is under 1,000, so it fires and the receiver hears of it.
    await worker.runRollup();
    await page.reload();
    expect(await page.getAttribute(`tr[data-rule="${ruleId}"]`, "data-state")).toBe("firing");
    expect(await page.textContent(`tr[data-rule="${ruleId}"] .pill`)).toBe("firing");
    expect(received.map((r) => [r.path, JSON.parse(r.body).kind])).toEqual([["/hooks/mcpulse-ops-hook", "firing"]]);
    expect(await page.locator('#alert-deliveries tr[data-status="delivered"]').count()).toBe(1);

    // The destination is in use: it cannot go before the rule.
    await page.click(`tr[data-destination="${destinationId}"] form[action$="/delete"] button`);
    expect(await page.textContent('[role="alert"]')).toContain("a rule still notifies it");

    // Delete the rule (from its edit panel), then the destination.
    await page.goto(`${worker.url}/alerts`);
    await page.click(`details[data-edit-rule="${ruleId}"] summary`);
    await page.click(`details[data-edit-rule="${ruleId}"] form[action="/alerts/rules/${ruleId}/delete"] button`);
    await page.waitForSelector("[data-notice]");
    expect(await page.locator(`tr[data-rule="${ruleId}"]`).count()).toBe(0);
    await page.click(`tr[data-destination="${destinationId}"] form[action$="/delete"] button`);
    await page.waitForSelector("[data-notice]");
    expect(await page.textContent("[data-notice]")).toContain("Destination deleted");
    expect(await page.locator(`tr[data-destination="${destinationId}"]`).count()).toBe(0);
    expect((await adminApi(`${project.project_id}/alert-rules`)).rules).toEqual([]);
    expect((await adminApi(`${project.project_id}/alert-destinations`)).destinations).toEqual([]);

    // Signing out as admin leaves a reader's page.
    await page.click('form[action="/admin/signout"] button');
    await page.waitForSelector("#alert-rules");
    expect(await page.locator("[data-admin-bar]").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    await context.close();
  });

  it("the admin's alerts page fits a phone and a laptop, with long rule, destination and tool names", async () => {
    const project = await createProject(worker, LONG_PROJECT_NAME);
    await ingestAndRollup(worker, project, longNamesWorkload(Date.now()));
    const adminPost = async (path: string, body: unknown) => {
      const res = await fetch(`${worker.url}/v1/admin/projects/${project.project_id}/${path}`, {
        method: "POST", headers: { authorization: `Bearer ${worker.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
      return (await res.json()) as { id: string };
    };
    const names = [ofLength("billing-oncall-eu-west-", 120), ofLength("支払い担当", 60)];
    const hook = await adminPost("alert-destinations", { kind: "webhook", url: `${receiverUrl}/hooks/long`, name: names[0] });
    const discord = await adminPost("alert-destinations", { kind: "discord", url: `${receiverUrl}/hooks/discord`, name: names[1] });
    await adminPost("alert-rules", { name: ofLength("Error rate of every tool over ten percent ", 150), metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [hook.id, discord.id] });
    await adminPost("alert-rules", { name: "p95 of the longest tool", metric: "p95_ms", op: ">", threshold: 100, tool: LONG_TOOLS[0], for_evaluations: 1, destinations: [hook.id] });
    await worker.runRollup();

    for (const width of WIDTHS) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, deviceScaleFactor: width < 640 ? 2 : 1 });
      const page = await context.newPage();
      await page.goto(`${worker.url}/alerts?key=${project.read_key}`);
      await page.click('form[action="/signin"] button[type="submit"]');
      await page.waitForSelector("#alert-rules");
      const reader = await measureLayout(page);
      expect(reader.scrollWidth, `reader at ${width}`).toBeLessThanOrEqual(width);
      expect(reader.overflowing, `reader at ${width}`).toEqual([]);
      expect(reader.header?.signOutInside, `reader at ${width}`).toBe(true);
      // The delivery log names the destinations by kind and name, never by id.
      expect(await page.locator("#alert-deliveries [data-destination-cell] b").allTextContents()).toContain("Discord");
      expect(await page.content()).toContain("not evaluated: fewer than 5 calls");

      await page.goto(`${worker.url}/admin/signin`);
      expect(await measureLayout(page)).toMatchObject({ scrollWidth: width, overflowing: [] });
      await page.fill('input[name="token"]', worker.adminToken);
      await page.click('form[action="/admin/signin"] button');
      await page.waitForSelector("[data-admin-bar]");
      // Every management panel open: the new-rule form and each rule's edit form.
      await page.evaluate('document.querySelectorAll("#manage-rules details").forEach((d) => { d.open = true; })');
      const admin = await measureLayout(page);
      const what = `admin at ${width}`;
      expect(admin.scrollWidth, what).toBeLessThanOrEqual(width);
      expect(admin.overflowing, what).toEqual([]);
      expect(admin.header?.signOutInside, what).toBe(true);
      expect(admin.header!.height, what).toBeLessThanOrEqual(64);
      if (width < 640) await page.screenshot({ path: `${SCREENSHOTS}alerts-admin-phone.png`, fullPage: true });
      await page.click('form[action="/admin/signout"] button');
      await context.close();
    }
  });
});
