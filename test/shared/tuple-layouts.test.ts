// No SQL in the rollup or db/ reads a stored JSON tuple by a typed position: every `->> N` comes
// from a layout of src/worker/db/tuples.ts (test/worker/tuples.test.ts checks writers and readers).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../src/worker/", import.meta.url));

test("rollup/ and db/ read stored tuples only through their named layouts", () => {
  const offenders: string[] = [];
  for (const dir of ["rollup", "db"]) {
    for (const file of readdirSync(join(ROOT, dir)).filter((f) => f.endsWith(".ts") && f !== "tuples.ts")) {
      readFileSync(join(ROOT, dir, file), "utf8").split("\n").forEach((line, i) => {
        if (/->>?\s*\d/.test(line)) offenders.push(`${dir}/${file}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  expect(offenders).toEqual([]);
});

test("the check finds a literal position", () => {
  expect(/->>?\s*\d/.test("SELECT j.value ->> 3 AS duration_ms")).toBe(true);
  expect(/->>?\s*\d/.test("SELECT ${stateField('duration_ms')}")).toBe(false);
});
