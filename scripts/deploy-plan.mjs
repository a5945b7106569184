// What `npm run deploy` does, as functions of the configuration and of what the account answers, so
// that every decision is testable without an account (test/scripts/deploy-plan.test.ts drives it
// with a fake wrangler). scripts/deploy.mjs only wires it to the real wrangler and the files.
//
// Who creates what (docs/deploying.md):
// - D1 databases: `wrangler d1 create`, before anything else, because every migration must reach a
//   database before the code that expects it (SPEC §7); `wrangler deploy` would create them only
//   while it deploys that code.
// - the KV namespace OAuth needs and the queues the worker sends to: `wrangler deploy`'s own
//   provisioning (a binding without an id is created on the first deploy, found again on the next);
// - the dead-letter queue, which the worker only consumes: `wrangler queues create` (wrangler's
//   provisioning covers bindings only, and its deploy refuses a consumer of a queue that does not exist);
// - the Analytics Engine dataset is created by its first write, the Durable Objects by the deploy.
// Every step goes through wrangler's commands, so a `wrangler login` session and an API token work
// alike; nothing here calls the account API directly.
//
// The ids are recorded in a generated configuration (wrangler.deploy.jsonc, git-ignored) that every
// remote command of the deploy uses; wrangler.toml keeps its placeholders, because the local D1 of
// `npm run dev` is keyed by its database_id and would look empty under a real one.

/** The generated configuration the remote commands use, beside wrangler.toml (same relative paths). */
export const DEPLOY_CONFIG = "wrangler.deploy.jsonc";
/** The admin token of the deployed worker, in the .env format `wrangler deploy --secrets-file` reads. */
export const DEPLOY_VARS = ".deploy.vars";
/** The next step the deploy prints. */
export const NEXT_STEP = 'npm run project:create -- "my server" --remote';
/** What to do without credentials (one line, before any remote step). */
export const LOGIN_HINT = "Not logged in to Cloudflare: run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN), then `npm run deploy` again.";

/**
 * A placeholder id of wrangler.toml: empty, or zeros but for at most the last digit (the shipped
 * `00000000-0000-0000-0000-000000000000`, `…-000000000002`, `00000000000000000000000000000000`).
 * No id Cloudflare issues has 31 leading zeros.
 */
export function isPlaceholderId(id) {
  if (id === undefined || id === null || id === "") return true;
  return /^0+[0-9a-f]?$/i.test(String(id).replaceAll("-", ""));
}

/** The name wrangler's deploy gives a resource it provisions for a binding without one. */
export function provisionedName(workerName, binding) {
  return `${workerName}-${binding.toLowerCase().replaceAll("_", "-")}`;
}

/**
 * The resources a configuration needs, in the order they are dealt with, each with the id the
 * configuration already names (or null for a placeholder).
 */
export function resourcesOf(config) {
  const d1 = (config.d1_databases ?? []).map((d) => ({
    kind: "d1",
    binding: d.binding,
    name: d.database_name,
    id: isPlaceholderId(d.database_id) ? null : d.database_id,
  }));
  const kv = (config.kv_namespaces ?? []).map((k) => ({
    kind: "kv",
    binding: k.binding,
    name: provisionedName(config.name, k.binding),
    id: isPlaceholderId(k.id) ? null : k.id,
  }));
  const producers = new Set((config.queues?.producers ?? []).map((p) => p.queue));
  const queueNames = [...producers, ...(config.queues?.consumers ?? []).map((c) => c.queue)];
  const queues = [...new Set(queueNames)].map((name) => ({ kind: "queue", name, producer: producers.has(name) }));
  return { d1, kv, queues };
}

/**
 * The actions for these resources given what the account holds (`null`: not looked at, a dry run).
 * account: { d1: [{ uuid, name }], kv: [{ id, title }], queues: string[] }.
 * Each action: { resource, action: "use" | "create" | "provision" | "check", id?, note }.
 */
export function planResources(resources, account) {
  const actions = [];
  for (const d of resources.d1) {
    if (d.id) {
      const known = account?.d1.find((db) => db.uuid === d.id);
      if (account && !known) {
        throw new Error(`${d.binding}: database_id ${d.id} in wrangler.toml is no D1 database of this account (\`npx wrangler d1 list\` shows them); set it to the placeholder 00000000-0000-0000-0000-000000000000 to find or create "${d.name}" by name.`);
      }
      actions.push({ resource: d, action: "use", id: d.id, note: `D1 ${d.binding}: database_id ${d.id} from wrangler.toml` });
      continue;
    }
    const found = account?.d1.find((db) => db.name === d.name);
    if (!account) actions.push({ resource: d, action: "check", note: `D1 ${d.binding}: "${d.name}" found by name, or created with \`wrangler d1 create ${d.name}\`` });
    else if (found) actions.push({ resource: d, action: "use", id: found.uuid, note: `D1 ${d.binding}: "${d.name}" exists (${found.uuid})` });
    else actions.push({ resource: d, action: "create", note: `D1 ${d.binding}: create "${d.name}" (\`wrangler d1 create ${d.name}\`)` });
  }
  for (const k of resources.kv) {
    if (k.id) {
      actions.push({ resource: k, action: "use", id: k.id, note: `KV ${k.binding}: id ${k.id} from wrangler.toml` });
      continue;
    }
    // "mcpulse-oauth" is the name the README once had people create by hand: found as well.
    const found = account?.kv.find((ns) => ns.title === k.name) ?? account?.kv.find((ns) => ns.title === legacyKvTitle(k.binding));
    if (!account) actions.push({ resource: k, action: "check", note: `KV ${k.binding}: "${k.name}" found by name, or created by \`wrangler deploy\`` });
    else if (found) actions.push({ resource: k, action: "use", id: found.id, note: `KV ${k.binding}: "${found.title}" exists (${found.id})` });
    else actions.push({ resource: k, action: "provision", note: `KV ${k.binding}: created by \`wrangler deploy\` as "${k.name}"` });
  }
  for (const q of resources.queues) {
    const exists = account?.queues.includes(q.name);
    if (!account) {
      actions.push({ resource: q, action: "check", note: q.producer ? `queue ${q.name}: created by \`wrangler deploy\` if missing` : `queue ${q.name}: created with \`wrangler queues create ${q.name}\` if missing` });
    } else if (exists) actions.push({ resource: q, action: "use", note: `queue ${q.name}: exists` });
    else if (q.producer) actions.push({ resource: q, action: "provision", note: `queue ${q.name}: created by \`wrangler deploy\`` });
    else actions.push({ resource: q, action: "create", note: `queue ${q.name}: create (\`wrangler queues create ${q.name}\`)` });
  }
  return actions;
}

function legacyKvTitle(binding) {
  return binding === "OAUTH_KV" ? "mcpulse-oauth" : null;
}

/**
 * The configuration the remote commands use: wrangler.toml's, with the ids found or created in
 * place of the placeholders, and no id where wrangler's deploy is to provision the resource.
 * ids: { d1: { BINDING: uuid }, kv: { BINDING: id } }.
 */
export function deployConfig(config, ids) {
  const out = structuredClone(config);
  for (const d of out.d1_databases ?? []) {
    const id = ids.d1[d.binding] ?? (isPlaceholderId(d.database_id) ? undefined : d.database_id);
    if (id) d.database_id = id;
    else delete d.database_id;
  }
  for (const k of out.kv_namespaces ?? []) {
    const id = ids.kv[k.binding] ?? (isPlaceholderId(k.id) ? undefined : k.id);
    if (id) k.id = id;
    else delete k.id;
  }
  return out;
}

/** The generated file's text: JSONC with a header saying where it comes from. */
export function deployConfigText(config) {
  return `// Generated by \`npm run deploy\` from wrangler.toml, with the ids of this account's resources.
// Edit wrangler.toml instead: this file is written again on every deploy (docs/deploying.md).
${JSON.stringify(config, null, 2)}
`;
}

/**
 * Whether a queue exists, from `wrangler queues info <name>` (which asks the account for that name,
 * so no page of `queues list` can leave it out): true, false, or null when the answer is neither.
 */
export function queueExistsOf(result, name) {
  if (result.status === 0) return true;
  return (result.stdout + result.stderr).includes(`Queue "${name}" does not exist`) ? false : null;
}

/** The first JSON array in a command's output (wrangler may print a banner or warnings before it). */
export function jsonArrayOf(output, what) {
  const start = output.indexOf("[");
  const end = output.lastIndexOf("]");
  if (start < 0 || end < start) throw new Error(`could not read ${what}: ${output.trim().slice(0, 200) || "no output"}`);
  try {
    return JSON.parse(output.slice(start, end + 1));
  } catch {
    throw new Error(`could not read ${what}: ${output.trim().slice(0, 200)}`);
  }
}

/** The workers.dev (or custom) URL `wrangler deploy` printed for the worker. */
export function deployedUrlOf(output) {
  return /https:\/\/[a-z0-9.-]+\.workers\.dev\b/i.exec(output)?.[0] ?? null;
}

/** The ADMIN_TOKEN of a .env-format file's text, or null. */
export function adminTokenOf(text) {
  return /^ADMIN_TOKEN\s*=\s*"?([^"\n]*)"?\s*$/m.exec(text ?? "")?.[1] || null;
}

/**
 * The whole deploy. deps:
 * - config: wrangler.toml as wrangler reads it (experimental_readRawConfig);
 * - args: the arguments after `npm run deploy --`; `--dry-run` is ours, the rest go to `wrangler deploy`;
 * - env: the environment (CLOUDFLARE_API_TOKEN);
 * - wrangler(args, { quiet }): runs wrangler, resolves { status, stdout, stderr } (output shown unless quiet);
 * - files: { read(name) → text | null, write(name, text, { secret }) } relative to the project root;
 * - randomToken(): a new admin token; log(line): prints a line.
 * Resolves the exit status.
 */
export async function deploy({ config, args, env, wrangler, files, randomToken, log }) {
  const dryRun = args.includes("--dry-run");
  const passThrough = args.filter((a) => a !== "--dry-run");
  const resources = resourcesOf(config);
  const databases = resources.d1.map((d) => d.binding);
  const step = (text) => log(`\n▸ ${text}`);

  if (dryRun) {
    log("Dry run: nothing remote is read or changed. A real `npm run deploy` would:");
    log(`  1. check the credentials (CLOUDFLARE_API_TOKEN ${env.CLOUDFLARE_API_TOKEN ? "is set" : "is not set"}; else \`wrangler whoami\`)`);
    log("  2. find or create what the account lacks:");
    for (const a of planResources(resources, null)) log(`       ${a.note}`);
    log(`  3. record the ids in ${DEPLOY_CONFIG} (wrangler.toml stays as it is)`);
    log(`  4. set ADMIN_TOKEN on a new worker (a random one, kept in ${DEPLOY_VARS})`);
    log(`  5. apply every pending migration to ${databases.join(", ")} (\`wrangler d1 migrations apply <binding> --remote\`)`);
    log(`  6. deploy the worker (\`wrangler deploy${passThrough.length ? " " + passThrough.join(" ") : ""}\`) and print its dashboard URL`);
    step("Building the worker as the deploy would (wrangler deploy --dry-run: nothing is uploaded)");
    const built = await wrangler(["deploy", "--dry-run", ...passThrough], { quiet: true });
    if (built.status !== 0) {
      log(built.stdout + built.stderr);
      log("The worker does not build (see above): fix that before deploying.");
      return built.status || 1;
    }
    log("The worker builds. Run `npm run deploy` to do the above.");
    return 0;
  }

  // 1. Credentials, before anything remote.
  if (!env.CLOUDFLARE_API_TOKEN) {
    const who = await wrangler(["whoami", "--json"], { quiet: true });
    if (who.status !== 0) {
      log(LOGIN_HINT);
      return 1;
    }
  }

  // 2. What the account holds, then what to do.
  step("Looking up the account's D1 databases, KV namespaces and queues");
  const queueNames = resources.queues.map((q) => q.name);
  const [d1, kv, ...queues] = await Promise.all([
    wrangler(["d1", "list", "--json"], { quiet: true }),
    wrangler(["kv", "namespace", "list"], { quiet: true }),
    ...queueNames.map((name) => wrangler(["queues", "info", name], { quiet: true })),
  ]);
  const queueExists = queues.map((r, i) => queueExistsOf(r, queueNames[i]));
  const failed = [d1, kv].find((r) => r.status !== 0) ?? queues.find((r, i) => queueExists[i] === null);
  if (failed) {
    log(failed.stdout + failed.stderr);
    log("Could not look up the account's resources (see above).");
    return failed.status || 1;
  }
  const account = {
    d1: jsonArrayOf(d1.stdout, "the D1 databases"),
    kv: jsonArrayOf(kv.stdout, "the KV namespaces"),
    queues: queueNames.filter((_, i) => queueExists[i]),
  };
  let actions;
  try {
    actions = planResources(resources, account);
  } catch (error) {
    log(error.message);
    return 1;
  }
  for (const a of actions) log(`  ${a.note}`);

  const ids = { d1: {}, kv: {} };
  for (const a of actions) {
    if (a.action === "use" && a.resource.kind === "d1") ids.d1[a.resource.binding] = a.id;
    if (a.action === "use" && a.resource.kind === "kv") ids.kv[a.resource.binding] = a.id;
  }
  for (const a of actions.filter((x) => x.action === "create")) {
    const created = a.resource.kind === "d1" ? await wrangler(["d1", "create", a.resource.name]) : await wrangler(["queues", "create", a.resource.name]);
    if (created.status !== 0) {
      log(`Could not create ${a.resource.name} (see above).`);
      return created.status || 1;
    }
  }
  if (actions.some((a) => a.action === "create" && a.resource.kind === "d1")) {
    const again = await wrangler(["d1", "list", "--json"], { quiet: true });
    const dbs = again.status === 0 ? jsonArrayOf(again.stdout, "the D1 databases") : [];
    for (const a of actions.filter((x) => x.action === "create" && x.resource.kind === "d1")) {
      const db = dbs.find((d) => d.name === a.resource.name);
      if (!db) {
        log(`D1 "${a.resource.name}" was created but is not listed yet: run \`npm run deploy\` again.`);
        return 1;
      }
      ids.d1[a.resource.binding] = db.uuid;
    }
  }

  // 3. The ids, where every remote command below reads them.
  const record = () => files.write(DEPLOY_CONFIG, deployConfigText(deployConfig(config, ids)));
  record();
  log(`  ids recorded in ${DEPLOY_CONFIG}`);
  const withConfig = ["--config", DEPLOY_CONFIG];

  // 4. The admin token: ours when we set it, left alone when someone else did.
  let secretsFile = null;
  let adminTokenNote;
  if (adminTokenOf(files.read(DEPLOY_VARS))) {
    secretsFile = DEPLOY_VARS;
    adminTokenNote = `ADMIN_TOKEN: the one in ${DEPLOY_VARS}`;
  } else {
    const secrets = await wrangler(["secret", "list", "--format", "json", ...withConfig], { quiet: true });
    // wrangler: `Worker "mcpulse-edge" not found. If this is a new Worker, run \`wrangler deploy\` first…`
    const workerMissing = secrets.status !== 0 && /Worker "[^"]*"[^\n]* not found|\b10007\b/.test(secrets.stdout + secrets.stderr);
    if (secrets.status !== 0 && !workerMissing) {
      log(secrets.stdout + secrets.stderr);
      log("Could not read the worker's secrets (see above).");
      return secrets.status || 1;
    }
    const names = workerMissing ? [] : jsonArrayOf(secrets.stdout, "the worker's secrets").map((s) => s.name);
    if (names.includes("ADMIN_TOKEN")) {
      adminTokenNote = `ADMIN_TOKEN: already set on the worker (not by this script): set ADMIN_TOKEN in the environment for the next step`;
    } else {
      files.write(DEPLOY_VARS, `ADMIN_TOKEN="${randomToken()}"\n`, { secret: true });
      secretsFile = DEPLOY_VARS;
      adminTokenNote = `ADMIN_TOKEN: a new random one, kept in ${DEPLOY_VARS}`;
    }
  }
  log(`  ${adminTokenNote}`);

  // 5. Every migration to every database, before the code that expects it.
  for (const binding of databases) {
    step(`Migrations: ${binding} (--remote)`);
    const applied = await wrangler(["d1", "migrations", "apply", binding, "--remote", ...withConfig]);
    if (applied.status !== 0) {
      log(`The migrations of ${binding} failed (see above): nothing was deployed.`);
      return applied.status || 1;
    }
  }

  // 6. The worker.
  step("Deploying the worker");
  const deployed = await wrangler(["deploy", ...withConfig, ...(secretsFile ? ["--secrets-file", secretsFile] : []), ...passThrough]);
  if (deployed.status !== 0) {
    log("wrangler deploy failed (see above).");
    return deployed.status || 1;
  }
  // A KV namespace wrangler's deploy provisioned: its id recorded too, so the next deploy names it.
  if (actions.some((a) => a.action === "provision" && a.resource.kind === "kv")) {
    const kv = await wrangler(["kv", "namespace", "list"], { quiet: true });
    if (kv.status === 0) {
      for (const a of actions.filter((x) => x.action === "provision" && x.resource.kind === "kv")) {
        const ns = jsonArrayOf(kv.stdout, "the KV namespaces").find((n) => n.title === a.resource.name);
        if (ns) ids.kv[a.resource.binding] = ns.id;
      }
      record();
    }
  }
  const url = deployedUrlOf(deployed.stdout + deployed.stderr);
  if (url) files.write(DEPLOY_URL_FILE, url + "\n");
  log("");
  log(`Deployed. Dashboard: ${url ? url + "/" : "the URL wrangler printed above"}`);
  log(`Next: ${NEXT_STEP}   (prints the keys; open the dashboard with the read key)`);
  return 0;
}

/** Where the deploy records the deployed URL (for `npm run project:create -- --remote`). */
export const DEPLOY_URL_FILE = ".wrangler/mcpulse-deploy-url";
