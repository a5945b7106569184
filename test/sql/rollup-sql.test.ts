// The rollup's statements as checked-in SQL (sql/rollup/): each snapshot must be exactly what the
// code assembles, so a reviewer reading a diff of them reads the SQL that runs.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SQL_DIR, snapshots } from "../../scripts/sql-snapshots.ts";

describe("sql/rollup snapshots (run `npm run sql:snapshots` after changing a rollup statement)", () => {
  const expected = snapshots();
  for (const [file, text] of expected) {
    it(`${file} is what the code assembles`, () => {
      expect(readFileSync(join(SQL_DIR, file), "utf8")).toBe(text);
    });
  }

  it("holds no snapshot the code no longer writes", () => {
    expect(readdirSync(SQL_DIR).sort()).toEqual([...expected.keys()].sort());
  });

  it("every statement is named once and ends with a semicolon", () => {
    for (const text of expected.values()) {
      const names = [...text.matchAll(/^-- ([A-Z_]+(?:\.\w+)?)$/gm)].map((m) => m[1]);
      expect(names.length).toBeGreaterThan(0);
      expect(new Set(names).size).toBe(names.length);
      expect(text.trimEnd().endsWith(";")).toBe(true);
    }
  });
});
