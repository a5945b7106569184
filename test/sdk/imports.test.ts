// The SDK's import graph (docs/architecture.md): no cycles, type-only imports included; never
// src/worker; from src/shared only the plain modules, never src/shared/index.ts, which also loads
// the Zod schemas the producer never needs at run time. Sources are read from disk.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findCycles } from "../helpers/import-cycles.ts";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "src");
const IMPORT = /^\s*(?:import|export)\s(?:[^"';]*?\sfrom\s)?\s*["'](\.{1,2}\/[^"']+)["']/gm;

/** src-relative path (`sdk/watch.ts`) → the src-relative paths it imports, for every file of src/sdk. */
function sdkImportGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const name of readdirSync(join(SRC, "sdk")).filter((file) => file.endsWith(".ts"))) {
    const source = readFileSync(join(SRC, "sdk", name), "utf8");
    const targets = [...source.matchAll(IMPORT)].map((match) => relative(SRC, join(SRC, "sdk", match[1] as string)));
    graph.set(`sdk/${name}`, [...new Set(targets)]);
  }
  return graph;
}


describe("SDK imports", () => {
  const graph = sdkImportGraph();

  it("sees the SDK's files", () => {
    expect(graph.get("sdk/index.ts")).toContain("sdk/watch.ts");
    expect(graph.size).toBeGreaterThan(15);
  });

  it("has no import cycle", () => {
    expect(findCycles(graph)).toEqual([]);
  });

  it("finds a cycle when there is one (the check can fail)", () => {
    const cyclic = new Map([["sdk/a.ts", ["sdk/b.ts"]], ["sdk/b.ts", ["shared/hash.ts", "sdk/a.ts"]]]);
    expect(findCycles(cyclic)).toEqual([["sdk/a.ts", "sdk/b.ts", "sdk/a.ts"]]);
  });

  it("imports only itself and src/shared's plain modules", () => {
    const wrong: string[] = [];
    for (const [from, targets] of graph) {
      for (const to of targets) {
        if (to.startsWith("sdk/")) continue;
        if (to.startsWith("shared/") && to !== "shared/index.ts") continue;
        wrong.push(`${from} → ${to}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
