// What D1 counts as a row read (`meta.rows_read`), per row of input, for the SQL shapes the rollup is
// built from: the cost model docs/scaling.md gives and the rollup's statements are written to.
// Every seek and every step of a table, index, materialized CTE, window partition or json_each
// counts; a sort (GROUP BY, ORDER BY) adds about one per row.
import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const N = 1_000;
const ARRAY = JSON.stringify(Array.from({ length: N }, (_, i) => [i % 10, i]));

beforeAll(async () => {
  await env.DB.batch([
    env.DB.prepare("DROP TABLE IF EXISTS rows_read_model"),
    env.DB.prepare("CREATE TABLE rows_read_model (id INTEGER PRIMARY KEY, g INTEGER NOT NULL, x INTEGER NOT NULL)"),
    env.DB.prepare("INSERT INTO rows_read_model (g, x) SELECT value ->> 0, value ->> 1 FROM json_each(?1)").bind(ARRAY),
  ]);
});

afterAll(async () => {
  await env.DB.prepare("DROP TABLE IF EXISTS rows_read_model").run();
});

async function perRow(sql: string): Promise<number> {
  const statement = env.DB.prepare(sql);
  const result = await (sql.includes("?1") ? statement.bind(ARRAY) : statement).all();
  return Math.round((result.meta.rows_read / N) * 10) / 10;
}

describe("rows read per input row", () => {
  it("a scan, json_each and jsonb_each: 1", async () => {
    expect(await perRow("SELECT SUM(x) FROM rows_read_model")).toBe(1);
    expect(await perRow("SELECT SUM(value ->> 1) FROM json_each(?1)")).toBe(1);
    expect(await perRow("SELECT SUM(value ->> 1) FROM jsonb_each(?1)")).toBe(1);
  });

  it("a materialized CTE: 1 to fill, 1 more for every scan of it", async () => {
    expect(await perRow("WITH m AS MATERIALIZED (SELECT x FROM rows_read_model) SELECT SUM(x) FROM m")).toBe(2);
    expect(await perRow("WITH m AS MATERIALIZED (SELECT x FROM rows_read_model) SELECT (SELECT SUM(x) FROM m) + (SELECT COUNT(*) FROM m)")).toBe(3);
  });

  it("a sort (GROUP BY, ORDER BY): about 1 more", async () => {
    expect(await perRow("SELECT g, SUM(x) FROM rows_read_model GROUP BY g")).toBe(2);
    expect(await perRow("SELECT json_group_array(x ORDER BY g) FROM rows_read_model")).toBe(2);
  });

  it("a window: ROW_NUMBER about 4, a running SUM 3, each LAG or LEAD about 1.5 more", async () => {
    expect(await perRow("SELECT SUM(n) FROM (SELECT ROW_NUMBER() OVER (PARTITION BY g ORDER BY x) AS n FROM rows_read_model)")).toBe(4);
    expect(await perRow("SELECT SUM(n) FROM (SELECT SUM(x) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS n FROM rows_read_model)")).toBe(3);
    const w = "WINDOW w AS (PARTITION BY g ORDER BY x)";
    expect(await perRow(`SELECT SUM(n) FROM (SELECT LAG(x) OVER w AS n FROM rows_read_model ${w})`)).toBe(5);
    const five = await perRow(`SELECT SUM(n) FROM (SELECT LAG(x) OVER w + LAG(id) OVER w + LAG(g) OVER w + LEAD(x) OVER w + LEAD(id) OVER w AS n FROM rows_read_model ${w})`);
    const packed = await perRow(`SELECT SUM(p ->> 0) FROM (SELECT LAG(json_array(x, id, g)) OVER w AS p, LEAD(json_array(x, id)) OVER w AS q FROM rows_read_model ${w})`);
    expect(five).toBe(11);
    expect(packed).toBe(8);
  });
});
