#!/usr/bin/env node
// `npm run deploy [-- --dry-run | wrangler deploy options]`: from a fresh Cloudflare account to a
// deployed worker in one command — what the account lacks is created, the ids recorded, every
// migration applied to every remote D1 before the code that expects it, then the worker deployed
// and its dashboard URL printed (docs/deploying.md). `--dry-run` reads and changes nothing remote.
// The decisions live in scripts/deploy-plan.mjs; this file only wires them to wrangler and the files.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deploy } from "./deploy-plan.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wranglerBin = join(root, "node_modules", "wrangler", "bin", "wrangler.js");

/** Runs wrangler; its output is shown as it comes (unless quiet) and also kept for the plan to read. */
function wrangler(args, { quiet = false } = {}) {
  if (!quiet) console.log(`$ wrangler ${args.join(" ")}`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [wranglerBin, ...args], { cwd: root, stdio: ["inherit", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      if (!quiet) process.stdout.write(chunk);
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (!quiet) process.stderr.write(chunk);
    });
    child.on("close", (status) => resolve({ status: status ?? 1, stdout, stderr }));
  });
}

const files = {
  read: (name) => (existsSync(join(root, name)) ? readFileSync(join(root, name), "utf8") : null),
  write: (name, text, { secret = false } = {}) => {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), text, secret ? { mode: 0o600 } : undefined);
  },
};

// wrangler.toml as wrangler itself reads it (the project has no TOML parser of its own).
const { experimental_readRawConfig } = await import(join(root, "node_modules", "wrangler", "wrangler-dist", "cli.js"));
const { rawConfig } = experimental_readRawConfig({ config: join(root, "wrangler.toml") });

process.exitCode = await deploy({
  config: rawConfig,
  args: process.argv.slice(2),
  env: process.env,
  wrangler,
  files,
  randomToken: () => randomBytes(24).toString("base64url"),
  log: (line) => console.log(line),
}).catch((error) => {
  // An answer of wrangler's the plan could not read: said in one line, not as a stack.
  console.error(error instanceof Error ? error.message : String(error));
  return 1;
});
