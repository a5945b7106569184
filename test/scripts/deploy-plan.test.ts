// `npm run deploy` against a fake account: a stand-in for wrangler that answers its commands from an
// in-memory account (D1 databases, KV namespaces, queues, the worker and its secrets) and records
// every command, so the plan — what is created, in which order, what is recorded — is checked
// without a network or a Cloudflare account.
import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
import * as plan from "../../scripts/deploy-plan.mjs";

type Result = { status: number; stdout: string; stderr: string };
type Wrangler = (args: string[], options?: { quiet?: boolean }) => Promise<Result>;
type Files = { read(name: string): string | null; write(name: string, text: string, options?: { secret?: boolean }): void };
type Config = Record<string, unknown> & { name: string };
const p = plan as {
  DEPLOY_CONFIG: string;
  DEPLOY_VARS: string;
  DEPLOY_URL_FILE: string;
  LOGIN_HINT: string;
  NEXT_STEP: string;
  isPlaceholderId(id: unknown): boolean;
  queueExistsOf(result: Result, name: string): boolean | null;
  resourcesOf(config: Config): { d1: { binding: string; name: string; id: string | null }[]; kv: { binding: string; name: string; id: string | null }[]; queues: { name: string; producer: boolean }[] };
  deploy(deps: { config: Config; args: string[]; env: Record<string, string | undefined>; wrangler: Wrangler; files: Files; randomToken(): string; log(line: string): void }): Promise<number>;
};

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** wrangler.toml as the deploy reads it. */
const shipped = experimental_readRawConfig({ config: `${ROOT}wrangler.toml` }).rawConfig as unknown as Config;

/** An account as the fake wrangler sees it. */
type Account = {
  d1: { uuid: string; name: string }[];
  kv: { id: string; title: string }[];
  queues: string[];
  worker: { secrets: string[] } | null;
  loggedIn: boolean;
  /** Binding → migrations applied (by database uuid). */
  migrated: string[];
  failMigrations?: boolean;
  /** `wrangler secret list` fails for another reason than a missing worker (the network). */
  failSecrets?: boolean;
};

function freshAccount(): Account {
  return { d1: [], kv: [], queues: [], worker: null, loggedIn: true, migrated: [] };
}

let counter = 0;
const newId = (hex: number) => (++counter).toString(16).padStart(hex, "a");

/** A fake wrangler over an account and a set of files; every command is recorded. */
function fakeWrangler(account: Account, files: Map<string, string>) {
  const calls: string[][] = [];
  const ok = (stdout = ""): Result => ({ status: 0, stdout, stderr: "" });
  const fail = (stderr: string): Result => ({ status: 1, stdout: "", stderr });
  const generated = () => JSON.parse((files.get(p.DEPLOY_CONFIG) ?? "").replace(/^\/\/.*\n/gm, "")) as Config & {
    d1_databases: { binding: string; database_name: string; database_id?: string }[];
    kv_namespaces: { binding: string; id?: string }[];
    queues: { producers: { queue: string }[] };
  };
  const wrangler: Wrangler = async (args) => {
    calls.push(args);
    // The command's words: everything before its first option.
    const firstOption = args.findIndex((a) => a.startsWith("--"));
    const cmd = (firstOption < 0 ? args : args.slice(0, firstOption)).join(" ");
    if (args[0] === "whoami") return account.loggedIn ? ok('{"loggedIn":true}') : fail("You are not authenticated.");
    if (args[0] === "deploy" && args.includes("--dry-run")) return ok("Total Upload: 900 KiB\n--dry-run: exiting now.");
    if (!account.loggedIn) return fail("Not logged in");
    if (cmd === "d1 list") return ok("⛅️ wrangler\n" + JSON.stringify(account.d1));
    if (cmd === "kv namespace list") return ok(JSON.stringify(account.kv));
    if (cmd.startsWith("queues info")) return account.queues.includes(args[2]!) ? ok(`Queue Name: ${args[2]}`) : fail(`✘ [ERROR] Queue "${args[2]}" does not exist. To create it, run: wrangler queues create ${args[2]}`);
    if (cmd.startsWith("d1 create")) {
      if (account.d1.some((d) => d.name === args[2])) return fail("A database with that name already exists");
      account.d1.push({ uuid: `${newId(8)}-1111-2222-3333-444455556666`, name: args[2]! });
      return ok("✅ Successfully created DB");
    }
    if (cmd.startsWith("queues create")) {
      account.queues.push(args[2]!);
      return ok("Created queue");
    }
    const config = args.includes("--config") ? generated() : null;
    if (cmd === "secret list" && account.failSecrets) return fail("✘ [ERROR] A request to the Cloudflare API failed: fetch failed");
    if (cmd === "secret list") return account.worker ? ok(JSON.stringify(account.worker.secrets.map((name) => ({ name, type: "secret_text" })))) : fail('✘ [ERROR] Worker "mcpulse-edge" not found.\n\nIf this is a new Worker, run `wrangler deploy` first to create it.');
    if (cmd.startsWith("d1 migrations apply")) {
      const db = config!.d1_databases.find((d) => d.binding === args[3]);
      // As wrangler: an id names the database; without one its name is looked up.
      const target = db?.database_id ? account.d1.find((d) => d.uuid === db.database_id) : account.d1.find((d) => d.name === db?.database_name);
      if (!target || account.failMigrations) return fail(`Couldn't find a D1 DB for ${args[3]}`);
      account.migrated.push(target.uuid);
      return ok("Migrations applied");
    }
    if (args[0] === "deploy") {
      // wrangler's deploy provisions bindings without an id and producer queues that are missing;
      // a consumer of a queue that does not exist is refused.
      for (const c of (config as unknown as { queues: { consumers: { queue: string }[] } }).queues.consumers) {
        const produced = config!.queues.producers.some((q) => q.queue === c.queue);
        if (!produced && !account.queues.includes(c.queue)) return fail(`Queue "${c.queue}" does not exist.`);
      }
      for (const q of config!.queues.producers) if (!account.queues.includes(q.queue)) account.queues.push(q.queue);
      for (const k of config!.kv_namespaces) {
        if (!k.id && !account.kv.some((n) => n.title === `${config!.name}-${k.binding.toLowerCase().replaceAll("_", "-")}`)) {
          account.kv.push({ id: newId(32), title: `${config!.name}-${k.binding.toLowerCase().replaceAll("_", "-")}` });
        }
      }
      for (const d of config!.d1_databases) if (!d.database_id) return fail("the deploy would provision a D1 the migrations never reached");
      const secretsFile = args[args.indexOf("--secrets-file") + 1];
      account.worker ??= { secrets: [] };
      if (args.includes("--secrets-file") && files.get(secretsFile!)?.includes("ADMIN_TOKEN=")) account.worker.secrets = [...new Set([...account.worker.secrets, "ADMIN_TOKEN"])];
      return ok("Uploaded mcpulse-edge\nDeployed mcpulse-edge triggers\n  https://mcpulse-edge.someone.workers.dev\nCurrent Version ID: 1");
    }
    return fail(`fake wrangler: unknown command ${args.join(" ")}`);
  };
  return { wrangler, calls };
}

async function run(account: Account, options: { args?: string[]; env?: Record<string, string>; files?: Map<string, string>; config?: Config } = {}) {
  const files = options.files ?? new Map<string, string>();
  const secretFiles = new Set<string>();
  const { wrangler, calls } = fakeWrangler(account, files);
  const lines: string[] = [];
  const status = await p.deploy({
    config: options.config ?? shipped,
    args: options.args ?? [],
    env: options.env ?? {},
    wrangler,
    files: {
      read: (name) => files.get(name) ?? null,
      write: (name, text, o) => {
        files.set(name, text);
        if (o?.secret) secretFiles.add(name);
      },
    },
    randomToken: () => "token-" + newId(6),
    log: (line) => lines.push(...line.split("\n")),
  });
  const generated = files.has(p.DEPLOY_CONFIG) ? JSON.parse(files.get(p.DEPLOY_CONFIG)!.replace(/^\/\/.*\n/gm, "")) : null;
  return { status, calls, lines, files, secretFiles, generated, output: lines.join("\n") };
}

const commandIndex = (calls: string[][], match: (args: string[]) => boolean) => calls.findIndex(match);

describe("npm run deploy on a fresh account", () => {
  it("creates what is missing, records the ids, migrates every database before the deploy, and prints the URL and the next step", async () => {
    const account = freshAccount();
    const r = await run(account);
    expect(r.status).toBe(0);
    // The two databases of wrangler.toml, created by wrangler's own command before anything is migrated.
    expect(account.d1.map((d) => d.name)).toEqual(["mcpulse", "mcpulse-2"]);
    expect(r.calls.filter((c) => c[0] === "d1" && c[1] === "create").map((c) => c[2])).toEqual(["mcpulse", "mcpulse-2"]);
    // The dead-letter queue (consumed only) is created; the produced queues are left to wrangler's deploy.
    expect(r.calls.filter((c) => c[0] === "queues" && c[1] === "create").map((c) => c[2])).toEqual(["mcpulse-ingest-dead"]);
    expect(account.queues.sort()).toEqual(["mcpulse-ingest", "mcpulse-ingest-dead", "mcpulse-rollup"]);
    // Every database migrated, each before the deploy.
    const deployAt = commandIndex(r.calls, (c) => c[0] === "deploy");
    for (const binding of ["DB", "DB_2"]) {
      const at = commandIndex(r.calls, (c) => c.join(" ").startsWith(`d1 migrations apply ${binding} --remote --config ${p.DEPLOY_CONFIG}`));
      expect(at).toBeGreaterThan(commandIndex(r.calls, (c) => c[1] === "create" && c[2] === "mcpulse-2"));
      expect(at).toBeLessThan(deployAt);
    }
    expect(account.migrated.sort()).toEqual(account.d1.map((d) => d.uuid).sort());
    // The ids are recorded in the generated configuration, none of them a placeholder.
    expect(r.generated.d1_databases.map((d: { database_id: string }) => d.database_id)).toEqual(account.d1.map((d) => d.uuid));
    expect(r.generated.kv_namespaces[0].id).toBe(account.kv.find((k) => k.title === "mcpulse-edge-oauth-kv")!.id);
    expect(r.calls[deployAt]).toEqual(["deploy", "--config", p.DEPLOY_CONFIG, "--secrets-file", p.DEPLOY_VARS]);
    // A random admin token, kept in a file only its owner reads, and set on the worker.
    expect(r.files.get(p.DEPLOY_VARS)).toMatch(/^ADMIN_TOKEN="token-\w+"\n$/);
    expect(r.secretFiles.has(p.DEPLOY_VARS)).toBe(true);
    expect(account.worker!.secrets).toEqual(["ADMIN_TOKEN"]);
    expect(r.files.get(p.DEPLOY_URL_FILE)).toBe("https://mcpulse-edge.someone.workers.dev\n");
    expect(r.output).toContain("Deployed. Dashboard: https://mcpulse-edge.someone.workers.dev/");
    expect(r.lines.at(-1)).toContain(`Next: ${p.NEXT_STEP}`);
  });

  it("finds everything by name on the next deploy: nothing created twice, the same ids and admin token", async () => {
    const account = freshAccount();
    const first = await run(account);
    const token = first.files.get(p.DEPLOY_VARS);
    const second = await run(account, { files: first.files });
    expect(second.status).toBe(0);
    expect(second.calls.filter((c) => c[1] === "create")).toEqual([]);
    expect(account.d1).toHaveLength(2);
    expect(account.kv).toHaveLength(1);
    expect(second.generated).toEqual(first.generated);
    expect(second.files.get(p.DEPLOY_VARS)).toBe(token);
    expect(second.calls.some((c) => c[0] === "secret")).toBe(false);
  });

  it("finds them again from another checkout that has no record (a CI run): the same databases and namespace", async () => {
    const account = freshAccount();
    const first = await run(account);
    const elsewhere = await run(account, { env: { CLOUDFLARE_API_TOKEN: "t" } });
    expect(elsewhere.status).toBe(0);
    expect(elsewhere.generated.d1_databases).toEqual(first.generated.d1_databases);
    expect(elsewhere.generated.kv_namespaces).toEqual(first.generated.kv_namespaces);
    // The worker has an ADMIN_TOKEN this checkout does not know: it is left as it is.
    expect(elsewhere.files.has(p.DEPLOY_VARS)).toBe(false);
    expect(elsewhere.calls.find((c) => c[0] === "deploy")).not.toContain("--secrets-file");
    expect(elsewhere.output).toContain("ADMIN_TOKEN: already set on the worker");
    // With a token in the environment, no `wrangler whoami`.
    expect(elsewhere.calls.some((c) => c[0] === "whoami")).toBe(false);
  });

  it("uses the KV namespace made by hand under its old name (mcpulse-oauth) instead of a new one", async () => {
    const account = freshAccount();
    account.kv.push({ id: "f".repeat(32), title: "mcpulse-oauth" });
    const r = await run(account);
    expect(r.generated.kv_namespaces[0].id).toBe("f".repeat(32));
    expect(account.kv).toHaveLength(1);
  });
});

describe("npm run deploy stops before harm", () => {
  it("without credentials: one line saying how to log in, and nothing but `wrangler whoami` run", async () => {
    const account = { ...freshAccount(), loggedIn: false };
    const r = await run(account);
    expect(r.status).toBe(1);
    expect(r.lines).toEqual([p.LOGIN_HINT]);
    expect(r.calls).toEqual([["whoami", "--json"]]);
    expect(r.files.size).toBe(0);
  });

  it("--dry-run reads and changes nothing remote, writes no file, and says what it would do", async () => {
    const account = { ...freshAccount(), loggedIn: false };
    const r = await run(account, { args: ["--dry-run"] });
    expect(r.status).toBe(0);
    // Only the local build check: `wrangler deploy --dry-run` uploads nothing.
    expect(r.calls).toEqual([["deploy", "--dry-run"]]);
    expect(r.files.size).toBe(0);
    for (const what of ['D1 DB: "mcpulse"', 'D1 DB_2: "mcpulse-2"', "KV OAUTH_KV", "queue mcpulse-ingest:", "queue mcpulse-rollup:", "queue mcpulse-ingest-dead:", "DB, DB_2"]) {
      expect(r.output).toContain(what);
    }
    // Other options still reach wrangler deploy.
    expect((await run(account, { args: ["--dry-run", "--minify"] })).calls).toEqual([["deploy", "--dry-run", "--minify"]]);
  });

  it("a database_id in wrangler.toml that the account does not have: stops before creating anything", async () => {
    const config = structuredClone(shipped) as Config & { d1_databases: { database_id: string }[] };
    config.d1_databases[0]!.database_id = "12345678-aaaa-bbbb-cccc-1234567890ab";
    const account = freshAccount();
    const r = await run(account, { config });
    expect(r.status).toBe(1);
    expect(r.output).toContain("DB: database_id 12345678-aaaa-bbbb-cccc-1234567890ab in wrangler.toml is no D1 database of this account");
    expect(r.calls.filter((c) => c[1] === "create" || c[0] === "deploy")).toEqual([]);
    expect(account.d1).toEqual([]);
  });

  it("a real database_id that the account has is used as it is", async () => {
    const config = structuredClone(shipped) as Config & { d1_databases: { database_id: string }[] };
    config.d1_databases[1]!.database_id = "12345678-aaaa-bbbb-cccc-1234567890ab";
    const account = freshAccount();
    account.d1.push({ uuid: "12345678-aaaa-bbbb-cccc-1234567890ab", name: "my-own-name" });
    const r = await run(account, { config });
    expect(r.status).toBe(0);
    expect(account.d1.map((d) => d.name)).toEqual(["my-own-name", "mcpulse"]);
    expect(r.generated.d1_databases[1].database_id).toBe("12345678-aaaa-bbbb-cccc-1234567890ab");
  });

  it("secrets it cannot read (not a missing worker): stops rather than replace an admin token it cannot see", async () => {
    const account = { ...freshAccount(), failSecrets: true };
    const r = await run(account);
    expect(r.status).toBe(1);
    expect(r.output).toContain("Could not read the worker's secrets");
    expect(r.files.has(p.DEPLOY_VARS)).toBe(false);
    expect(r.calls.some((c) => c[0] === "deploy" || (c[0] === "d1" && c[1] === "migrations"))).toBe(false);
  });

  it("a failed migration: the worker is not deployed", async () => {
    const account = { ...freshAccount(), failMigrations: true };
    const r = await run(account);
    expect(r.status).toBe(1);
    expect(r.calls.some((c) => c[0] === "deploy")).toBe(false);
    expect(r.output).toContain("The migrations of DB failed (see above): nothing was deployed.");
  });
});

describe("deploy planning rules", () => {
  it("reads wrangler.toml's resources: two databases and a KV namespace with placeholder ids, the dead-letter queue consumed only", () => {
    const r = p.resourcesOf(shipped);
    expect(r.d1).toEqual([
      { kind: "d1", binding: "DB", name: "mcpulse", id: null },
      { kind: "d1", binding: "DB_2", name: "mcpulse-2", id: null },
    ]);
    expect(r.kv).toEqual([{ kind: "kv", binding: "OAUTH_KV", name: "mcpulse-edge-oauth-kv", id: null }]);
    expect(r.queues).toEqual([
      { kind: "queue", name: "mcpulse-ingest", producer: true },
      { kind: "queue", name: "mcpulse-rollup", producer: true },
      { kind: "queue", name: "mcpulse-ingest-dead", producer: false },
    ]);
  });

  it("a placeholder is zeros but for at most the last digit", () => {
    expect(p.isPlaceholderId("00000000-0000-0000-0000-000000000000")).toBe(true);
    expect(p.isPlaceholderId("00000000-0000-0000-0000-000000000002")).toBe(true);
    expect(p.isPlaceholderId("0".repeat(32))).toBe(true);
    expect(p.isPlaceholderId("")).toBe(true);
    expect(p.isPlaceholderId(undefined)).toBe(true);
    // Two digits that are not zero: an id.
    expect(p.isPlaceholderId("00000000-0000-0000-0000-000000000012")).toBe(false);
    expect(p.isPlaceholderId("12345678-aaaa-bbbb-cccc-1234567890ab")).toBe(false);
  });

  it("reads a queue's existence from wrangler queues info: there, missing (for that very name), or unknown", () => {
    expect(p.queueExistsOf({ status: 0, stdout: "Queue Name: mcpulse-ingest", stderr: "" }, "mcpulse-ingest")).toBe(true);
    expect(p.queueExistsOf({ status: 1, stdout: "", stderr: '✘ [ERROR] Queue "mcpulse-ingest-dead" does not exist.' }, "mcpulse-ingest-dead")).toBe(false);
    // Another queue's answer, or a network failure, is not an answer about this one.
    expect(p.queueExistsOf({ status: 1, stdout: "", stderr: '✘ [ERROR] Queue "mcpulse-ingest-dead" does not exist.' }, "mcpulse-ingest")).toBeNull();
    expect(p.queueExistsOf({ status: 1, stdout: "", stderr: "fetch failed" }, "mcpulse-ingest")).toBeNull();
  });
});
