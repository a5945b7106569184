// `npm run test:mcp-latest`: installs the newest published 1.x and 2.x MCP SDKs into a temporary
// folder (never into node_modules) and runs the SDK's facts, internals and contract tests against
// them (vitest.mcp-latest.config.ts), so a release that renames an internal watch() relies on
// fails here before a user finds watch() silent. The folder is removed afterwards.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "mcpulse-mcp-latest-"));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
let status = 1;
try {
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "mcp-latest", private: true, type: "module" }));
  writeFileSync(join(dir, "index.js"), "");
  const packages = ["@modelcontextprotocol/sdk@1", "@modelcontextprotocol/server@2", "@modelcontextprotocol/client@2"];
  execFileSync(npm, ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", "--loglevel=error", ...packages], {
    cwd: dir,
    stdio: ["ignore", "ignore", "inherit"],
  });
  for (const pkg of ["@modelcontextprotocol/sdk", "@modelcontextprotocol/server", "@modelcontextprotocol/client"]) {
    const { version } = JSON.parse(readFileSync(join(dir, "node_modules", pkg, "package.json"), "utf8"));
    console.log(`${pkg} ${version}`);
  }
  const run = spawnSync(process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "run", "--config", "vitest.mcp-latest.config.ts"], {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, MCP_LATEST_DIR: dir },
  });
  status = run.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
