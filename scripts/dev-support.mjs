// What `npm run dev` shares with `npm run example` and its tests: where the running worker's URL is
// recorded, and the one-line summary of `wrangler d1 migrations apply` (whose own output repeats the
// whole migration table after every migration: 441 lines for a first run of 12).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Where `npm run dev` writes the URL it serves, for `npm run example` to find (inside the ignored
 * .wrangler directory). MCPULSE_DEV_URL_FILE names another file (tests use it).
 */
export function devUrlFile(env = process.env) {
  return env.MCPULSE_DEV_URL_FILE || join(ROOT, ".wrangler", "mcpulse-dev-url");
}

export function writeDevUrl(url, env = process.env) {
  const file = devUrlFile(env);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, url + "\n");
}

/** The URL a running `npm run dev` recorded, or null. */
export function readDevUrl(env = process.env) {
  const file = devUrlFile(env);
  if (!existsSync(file)) return null;
  const url = readFileSync(file, "utf8").trim();
  return /^https?:\/\/\S+$/.test(url) ? url : null;
}

/** Removes the record when `npm run dev` stops (only if it is still ours). */
export function clearDevUrl(url, env = process.env) {
  if (readDevUrl(env) === url) rmSync(devUrlFile(env), { force: true });
}

/** The URL `wrangler dev` serves for these `npm run dev` arguments (its defaults are ours: 127.0.0.1:8787). */
export function devUrlFor(args) {
  const value = (name, fallback) => {
    const i = args.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
    if (i < 0) return fallback;
    return args[i].includes("=") ? args[i].slice(args[i].indexOf("=") + 1) : (args[i + 1] ?? fallback);
  };
  const ip = value("--ip", "127.0.0.1");
  const host = ip.includes(":") ? `[${ip}]` : ip === "0.0.0.0" ? "127.0.0.1" : ip;
  return `http://${host}:${value("--port", "8787")}`;
}

/**
 * What `wrangler d1 migrations apply` did, in one line: the migrations it applied (named from its
 * "Migrations to be applied" table), or that there were none. Null when the output is not one we
 * know — the caller then shows wrangler's own output rather than guess.
 */
export function migrationSummary(output) {
  if (/No migrations to apply/.test(output)) return "The local D1 is up to date: no pending migrations.";
  const start = output.indexOf("Migrations to be applied");
  const end = output.indexOf("About to apply", start);
  if (start < 0 || end < 0) return null;
  const names = [...output.slice(start, end).matchAll(/(\d{4}_[\w-]+\.sql)/g)].map((m) => m[1]);
  if (names.length === 0) return null;
  const list = names.length <= 3 ? names.join(", ") : `${names[0]} … ${names.at(-1)}`;
  return `Applied ${names.length} migration${names.length === 1 ? "" : "s"} to the local D1: ${list}.`;
}

/**
 * The D1 bindings of a wrangler.toml, in order (SPEC §7: `DB` and every `DB_<suffix>`): what `npm run
 * dev` and `npm run deploy` apply the migrations to. Reads the `binding` of each [[d1_databases]] block.
 */
export function databaseBindings(tomlText = readFileSync(join(ROOT, "wrangler.toml"), "utf8")) {
  const bindings = [];
  for (const block of tomlText.split(/^\s*\[/m)) {
    if (!/^\[d1_databases\]\]/.test(block)) continue;
    const match = /^\s*binding\s*=\s*"([^"]+)"/m.exec(block);
    if (match) bindings.push(match[1]);
  }
  return bindings;
}
