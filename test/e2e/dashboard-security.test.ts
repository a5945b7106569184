// The dashboard against another site, in real headless Chromium (SPEC §3): a page served from a
// second origin auto-submits sign-in and sign-out forms and follows a `?key=` link, and the cookie
// never changes; the pages' script works under the CSP with no violation; producers' names — 200
// characters, right-to-left overrides, `.`, `..`, 150 emoji — neither break the layout nor lose their page.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { argsHash } from "../../src/shared/hash.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";

const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const COOKIE = "mcpulse_session";
const LONG = "a_tool_name_that_goes_on_".repeat(8); // 200 characters
const SPOOF = "txt.exe\u202Egpj.tool";
const EMOJI = "🚀".repeat(150);
const NAMES = [LONG, SPOOF, EMOJI, ".", "..", "search_orders"];

let worker: RunningWorker;
let browser: Browser;
let attacker: Server;
/** The other site: `localhost` is another site than the worker's `127.0.0.1`. */
let attackerUrl: string;
let victim: Awaited<ReturnType<typeof createProject>>;
let intruder: Awaited<ReturnType<typeof createProject>>;

/** Pages of the attacker's site: each sends the browser to the dashboard on load, as a real attack would. */
function attackerPage(path: string): string {
  const target = worker.url;
  switch (path) {
    case "/signin-form":
      return `<form id="f" method="post" action="${target}/signin"><input name="key" value="${intruder.read_key}"></form><script>document.getElementById("f").submit()</script>`;
    case "/signout-form":
      return `<form id="f" method="post" action="${target}/signout"></form><script>document.getElementById("f").submit()</script>`;
    case "/key-link":
      return `<a id="a" href="${target}/?key=${intruder.read_key}">your metrics</a><script>document.getElementById("a").click()</script>`;
    default:
      return "";
  }
}

async function ingestCalls(project: { project_id: string; ingest_key: string }, names: string[]): Promise<void> {
  const key = project.ingest_key;
  const now = Date.now();
  const batch = names.flatMap((name, i) =>
    Array.from({ length: i + 1 }, (_, k) => ({
      v: 1, type: "call", session_id: `s_${k}`, client_name: "cursor", tool_name: name, started_at: new Date(now - 60_000 * (i * 10 + k + 1)).toISOString(),
      duration_ms: 40, outcome: "ok", response_bytes: 100, is_empty: false, args_hash: argsHash({ name, k }),
    })),
  );
  const res = await fetch(`${worker.url}/v1/ingest`, {
    method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ batch }),
  });
  expect(res.status).toBe(202);
  const deadline = Date.now() + 20_000;
  for (;;) {
    if ((await storedPayloadRows(worker.db, project.project_id)) >= batch.length) break;
    if (Date.now() > deadline) throw new Error("ingest: rows did not land");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Signs `context` in with `key` the way a user does: the `?key=` link, then the confirmation button. */
async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${worker.url}/?key=${key}`);
  await page.click('form[action="/signin"] button[type="submit"]');
  await page.waitForSelector("[data-project]");
}

async function cookieOf(context: BrowserContext): Promise<string | undefined> {
  return (await context.cookies(worker.url)).find((c) => c.name === COOKIE)?.value;
}

beforeAll(async () => {
  worker = await startWorker();
  victim = await createProject(worker, "Victim project");
  intruder = await createProject(worker, "Attacker project");
  await ingestCalls(victim, NAMES);
  await worker.runRollup();
  attacker = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!DOCTYPE html><html><body>${attackerPage(new URL(req.url ?? "/", "http://x").pathname)}</body></html>`);
  });
  await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  attackerUrl = `http://localhost:${(attacker.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  if (attacker) await new Promise((resolve) => attacker.close(resolve));
  await worker?.stop();
});

describe("the dashboard against a cross-site page", () => {
  it("keeps the cookie when another site auto-submits a sign-in form with its key", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, victim.read_key);
    const signedIn = await cookieOf(context);
    // The cookie holds a signed session id, never the key.
    expect(signedIn).toMatch(/^read\./);
    expect(decodeURIComponent(signedIn!)).not.toContain(victim.read_key);
    const answer = page.waitForResponse((r) => r.url() === `${worker.url}/signin`);
    await page.goto(`${attackerUrl}/signin-form`);
    expect((await answer).status()).toBe(403);
    expect(await cookieOf(context)).toBe(signedIn);
    await page.goto(`${worker.url}/`);
    expect(await page.textContent("[data-project]")).toBe("Victim project");
    await context.close();
  });

  it("keeps the cookie when another site sends the browser to a ?key= link: a confirmation step names the project", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, victim.read_key);
    const signedIn = await cookieOf(context);
    await page.goto(`${attackerUrl}/key-link`);
    await page.waitForSelector("[data-confirm-signin]");
    expect(await page.textContent("[data-confirm-project]")).toBe("Attacker project");
    expect(await cookieOf(context)).toBe(signedIn);
    // The page's script took the key out of the address bar.
    expect(page.url()).toBe(`${worker.url}/`);
    await context.close();
  });

  it("keeps the cookie when another site auto-submits the sign-out form", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, victim.read_key);
    const signedIn = await cookieOf(context);
    const answer = page.waitForResponse((r) => r.url() === `${worker.url}/signout`);
    await page.goto(`${attackerUrl}/signout-form`);
    expect((await answer).status()).toBe(403);
    expect(await cookieOf(context)).toBe(signedIn);
    // The dashboard's own sign-out button still works.
    await page.goto(`${worker.url}/`);
    await page.click('form[action="/signout"] button');
    await page.waitForSelector('form[action="/signin"]');
    expect(await cookieOf(context)).toBeUndefined();
    await context.close();
  });
});

describe("the dashboard's pages in Chromium", () => {
  it("run their script under the CSP with no violation: sorting and the client select", async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    // Runs in the page (a string: this project's TypeScript has no DOM types).
    await context.addInitScript(`
      globalThis.cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) => globalThis.cspViolations.push(e.violatedDirective + " " + e.blockedURI));
    `);
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    await signIn(page, victim.read_key);
    const header = (await page.request.get(`${worker.url}/`)).headers()["content-security-policy"] ?? "";
    expect(/script-src ([^;]*)/.exec(header)?.[1]).toMatch(/^'nonce-[^']+'$/);
    await page.click('#tools-table th:has-text("Calls")');
    const desc = await page.$$eval('#tools-table tbody td[data-col="calls"]', (tds) => tds.map((td) => Number(td.getAttribute("data-value"))));
    expect(desc).toEqual([...desc].sort((a, b) => b - a));
    expect(await page.getAttribute('#tools-table th:has-text("Calls")', "class")).toContain("sorted-desc");
    await page.selectOption('select[name="client"]', "cursor");
    await page.waitForURL((u) => u.searchParams.get("client") === "cursor");
    expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    expect(consoleErrors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    await context.close();
  });

  it("keeps the numeric columns on screen beside a 200-character name, and shows the whole name on hover", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page, victim.read_key);
    type Fit = { viewport: number; pageWidth: number; tableRight: number; lastColumnRight: number; scrolls: boolean };
    const fit = (await page.evaluate(`(() => {
      const table = document.getElementById("tools-table");
      const last = table.querySelector('tbody td[data-col="schema_bytes"]');
      return {
        viewport: document.documentElement.clientWidth,
        pageWidth: document.documentElement.scrollWidth,
        tableRight: table.getBoundingClientRect().right,
        lastColumnRight: last.getBoundingClientRect().right,
        scrolls: table.parentElement.scrollWidth > table.parentElement.clientWidth,
      };
    })()`)) as Fit;
    expect(fit.pageWidth).toBeLessThanOrEqual(fit.viewport);
    expect(fit.tableRight).toBeLessThanOrEqual(fit.viewport);
    expect(fit.lastColumnRight).toBeLessThanOrEqual(fit.viewport);
    expect(fit.scrolls).toBe(false);
    const cell = page.locator(`#tools-table tr[data-tool="${LONG}"] bdi.name`);
    expect(await cell.getAttribute("title")).toBe(LONG);
    const box = await cell.boundingBox();
    expect(box!.width).toBeLessThan(400);
    // The override is shown, not obeyed: the name reads in its stored order, with a visible mark.
    const spoof = page.locator(`#tools-table tr[data-tool="${SPOOF}"] bdi.name`);
    expect(await spoof.innerText()).toBe("txt.exeU+202Egpj.tool");
    await context.close();
  });

  it("opens the pages of tools named '.', '..' and 150 emoji from their links", async () => {
    const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    await signIn(page, victim.read_key);
    for (const [i, name] of NAMES.entries()) {
      await page.goto(`${worker.url}/`);
      await page.click(`#tools-table tr[data-tool="${name}"] a`);
      await page.waitForURL((u) => u.pathname === "/tool" && u.searchParams.get("name") === name);
      expect(await page.getAttribute("[data-tool-name] bdi", "title"), name).toBe(name.replace("\u202E", "\\u{202E}"));
      expect(await page.getAttribute('[data-card="calls"]', "data-value"), name).toBe(String(i + 1));
    }
    await context.close();
  });
});
