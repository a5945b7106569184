// SQL by name (src/worker/db/named-sql.ts): `:name` parameters compiled to D1's positional `?N` and
// bound from an object, on real D1; SELECT lists built from one column list.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { columnsByName, compileNamed, namedStatement, namedValues } from "../../../src/worker/db/named-sql.ts";

describe("named parameters", () => {
  it("number each name once, in order of first use: a name used twice is one ?N", () => {
    expect(compileNamed("SELECT :b + :a, :b - :a_b")).toEqual({ sql: "SELECT ?1 + ?2, ?1 - ?3", names: ["b", "a", "a_b"] });
  });

  it("leave string literals, quoted identifiers and comments as they are", () => {
    const sql = `SELECT ':not_a_name', 'it''s :no', "odd:name" -- :nor_this, nor ?1\n  , :yes /* :no ? */, json_extract('{}', '$.a')`;
    expect(compileNamed(sql)).toEqual({ sql: sql.replace(":yes", "?1"), names: ["yes"] });
  });

  it("refuse a positional parameter and a name that is not snake_case", () => {
    expect(() => compileNamed("SELECT ?1")).toThrow(/positional/);
    expect(() => compileNamed("SELECT :a, ?")).toThrow(/positional/);
    expect(() => compileNamed("SELECT :holderId")).toThrow(/snake_case/);
    expect(() => compileNamed("SELECT 'unterminated")).toThrow(/unterminated/);
  });

  it("compile a statement's text once", () => {
    const sql = "SELECT :once_only AS v";
    expect(compileNamed(sql)).toBe(compileNamed(sql));
  });

  it("bind by name on D1, whatever the order of the object's keys", async () => {
    const row = await namedStatement(env.DB, "SELECT :a AS a, :b AS b, :a + :b AS sum, :none IS NULL AS none", { b: 2, none: null, a: 40 }).first();
    expect(row).toEqual({ a: 40, b: 2, sum: 42, none: 1 });
    expect(await namedStatement(env.DB, "SELECT 7 AS v").first()).toEqual({ v: 7 });
  });

  it("throw on a name without a value and on a value the statement does not use", () => {
    expect(() => namedValues("SELECT :a, :b", { a: 1 })).toThrow(/no value for :b/);
    expect(() => namedValues("SELECT :a", { a: 1, typo: 2 })).toThrow(/has no :typo/);
    expect(() => namedStatement(env.DB, "SELECT :a")).toThrow(/no value for :a/);
  });
});

describe("columns by name", () => {
  const COLUMNS = ["k", "calls", "retries", "spans"] as const;

  it("take each column from its value, the fill for the others, in the list's order", () => {
    expect(columnsByName(COLUMNS, { spans: "1", k: "k", calls: "call_count" }, "0")).toBe("k, call_count AS calls, 0 AS retries, 1 AS spans");
    expect(() => columnsByName(COLUMNS, { k: "k", span: "1" }, "0")).toThrow(/no column span/);
  });

  it("without a fill, need a value for every column (a column added to the list is never silently 0)", () => {
    expect(() => columnsByName(COLUMNS, { k: "k", calls: "1", spans: "1" })).toThrow(/no value for column retries/);
    expect(columnsByName(COLUMNS, { k: "k", calls: "c", retries: "r", spans: "s" })).toBe("k, c AS calls, r AS retries, s AS spans");
  });

  it("line up the arms of a UNION ALL by name, whatever order the values are written in", async () => {
    const { results } = await env.DB.prepare(`SELECT k, SUM(calls) AS calls, SUM(retries) AS retries, SUM(spans) AS spans FROM (
        SELECT ${columnsByName(COLUMNS, { calls: "5", k: "1" }, "0")}
        UNION ALL SELECT ${columnsByName(COLUMNS, { retries: "2", spans: "3", k: "1" }, "0")}) GROUP BY k`).all();
    expect(results).toEqual([{ k: 1, calls: 5, retries: 2, spans: 3 }]);
  });
});
