// Counts kept as JSON objects (src/worker/db/json-counts.ts), added in place on real D1: the same
// sums as adding both objects key by key in JavaScript, for any key a pair or a bucket can have, and
// the rows read grow with the added object only.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addCountsSql } from "../../../src/worker/db/json-counts.ts";

type Counts = Record<string, number>;

/** The reference: both objects added key by key, a key whose sum is 0 left out. */
function added(stored: Counts, more: Counts): Counts {
  const sum: Counts = { ...stored };
  for (const [key, n] of Object.entries(more)) {
    const total = (sum[key] ?? 0) + n;
    if (total === 0) delete sum[key];
    else sum[key] = total;
  }
  return sum;
}

async function addInD1(stored: Counts, more: Counts): Promise<{ counts: Counts; rowsRead: number }> {
  const result = await env.DB.prepare(`SELECT ${addCountsSql("?1", "?2")} AS counts`)
    .bind(JSON.stringify(stored), JSON.stringify(more))
    .all<{ counts: string }>();
  return { counts: JSON.parse(result.results[0]!.counts) as Counts, rowsRead: result.meta.rows_read };
}

const pairKey = (from: string, to: string) => JSON.stringify([from, to]);

describe("adding JSON counts", () => {
  it("adds key by key, adds new keys and drops a key whose sum is 0", async () => {
    const stored = { "3": 4, "7": 1, "12": 2 };
    const more = { "7": -1, "12": 5, "40": 1 };
    expect((await addInD1(stored, more)).counts).toEqual(added(stored, more));
    expect((await addInD1(stored, more)).counts).toEqual({ "3": 4, "12": 7, "40": 1 });
  });

  it("leaves the stored object as it is when nothing is added", async () => {
    const stored = { "1": 2 };
    expect(await env.DB.prepare(`SELECT ${addCountsSql("?1", "'{}'")} AS c`).bind(JSON.stringify(stored)).first("c")).toBe(JSON.stringify(stored));
  });

  it("finds keys holding quotes, backslashes, brackets, dots and path syntax", async () => {
    const names = [`say "hi"`, "back\\slash", "[0]", "$.a.b", "a.b", "tail\\", '"', "ünï-côdé 🚀", "#-1", "*", ""];
    const stored: Counts = {};
    const more: Counts = {};
    names.forEach((from, i) => {
      stored[pairKey(from, names[(i + 1) % names.length]!)] = i + 1;
      more[pairKey(from, names[(i + 1) % names.length]!)] = i % 3 === 0 ? -(i + 1) : 10;
      more[pairKey(names[(i + 2) % names.length]!, from)] = 1;
    });
    expect((await addInD1(stored, more)).counts).toEqual(added(stored, more));
  });

  it("reads the added object's keys, not the stored object's", async () => {
    const stored: Counts = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [String(i), i + 1]));
    const { counts, rowsRead } = await addInD1(stored, { "5": 1, "600": 2 });
    expect(counts).toEqual(added(stored, { "5": 1, "600": 2 }));
    expect(rowsRead).toBeLessThan(10);
  });
});
