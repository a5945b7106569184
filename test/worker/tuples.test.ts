// The positional JSON tuples of db/tuples.ts: what each writer stores, every SQL reader built from
// the same layout reads back field by field, in real D1.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseBatch } from "../../src/shared/index.ts";
import { batchTuples } from "../../src/worker/db/raw-writes.ts";
import {
  CALL_BATCH_CALL,
  CALL_STATE_CALL,
  PAIR_KEY,
  RAW_AGREEMENT,
  RAW_STARTUP,
  tupleArraySql,
  tupleField,
  tupleOf,
  tuplePosition,
  type TupleLayout,
} from "../../src/worker/db/tuples.ts";
import { agreementPayload, callPayload, startupPayload } from "./helpers/ingest.ts";

/** Reads every field of each stored tuple back with the layout's SQL readers. */
async function readBack(layout: TupleLayout, tuples: unknown[][]): Promise<Record<string, unknown>[]> {
  const columns = layout.map((name) => `${tupleField(layout, name, "value", name === "tools" || name === "agree_declared" ? "json" : "value")} AS "${name}"`);
  const rows = await env.DB.prepare(`SELECT ${columns.join(", ")} FROM json_each(?1) ORDER BY key`).bind(JSON.stringify(tuples)).all();
  return rows.results;
}

describe("tuple layouts", () => {
  it("the ingest writer's tuples read back field by field (calls, startups, verdicts)", async () => {
    const parsed = parseBatch({ batch: [callPayload({ is_empty: true }), startupPayload(), agreementPayload({ tool_a: "zeta", tool_b: "alpha" })] }, Date.now());
    if (!parsed.ok) throw new Error("the fixture batch must parse");
    const tuples = batchTuples(parsed.payloads);
    const [call] = await readBack(CALL_BATCH_CALL, tuples.calls);
    const sent = parsed.payloads.find((p) => p.type === "call")!;
    expect(call).toMatchObject({
      session_id: sent.session_id, client_name: sent.client_name, tool_name: sent.tool_name, started_at_ms: sent.started_at_ms,
      duration_ms: sent.duration_ms, outcome: sent.outcome, response_bytes: sent.response_bytes, is_empty: 1, args_hash: sent.args_hash,
    });
    const [startup] = await readBack(RAW_STARTUP, tuples.startups);
    const sentStartup = parsed.payloads.find((p) => p.type === "startup")!;
    expect(startup).toMatchObject({ session_id: sentStartup.session_id, client_name: sentStartup.client_name, transport: sentStartup.transport });
    expect(JSON.parse(startup!.tools as string).map((t: { name: string }) => t.name)).toEqual(sentStartup.tools.map((t) => t.name));
    const [verdict] = await readBack(RAW_AGREEMENT, tuples.agreements);
    // Stored in code-point order (SPEC §2.5).
    expect(verdict).toMatchObject({ tool_a: "alpha", tool_b: "zeta" });
  });

  it("the SQL writer of a call_state call and its readers agree", async () => {
    const record = { call_seq: 7, tool_name: "search", started_at_ms: 1_700_000_000_000.5, duration_ms: 12, outcome: "ok", response_bytes: 40, is_empty: 0, args_hash: "abcdef012345" };
    const selects = CALL_STATE_CALL.map((name) => `?${tuplePosition(CALL_STATE_CALL, name) + 1} AS ${name}`).join(", ");
    const written = await env.DB.prepare(`SELECT ${tupleArraySql(CALL_STATE_CALL)} AS t FROM (SELECT ${selects})`)
      .bind(...tupleOf(CALL_STATE_CALL, record))
      .first<{ t: string }>();
    expect(JSON.parse(written!.t)).toEqual(tupleOf(CALL_STATE_CALL, record));
    const [read] = await readBack(CALL_STATE_CALL, [JSON.parse(written!.t)]);
    expect(read).toEqual(record);
  });

  it("a pair's key reads back as its two tools", async () => {
    const key = await env.DB.prepare(`SELECT ${tupleArraySql(PAIR_KEY, { from_tool: "?1", to_tool: "?2" })} AS k`).bind("a\u0000b", "🚀").first<{ k: string }>();
    const back = await env.DB.prepare(`SELECT ${tupleField(PAIR_KEY, "from_tool", "?1")} AS f, ${tupleField(PAIR_KEY, "to_tool", "?1")} AS t`).bind(key!.k).first();
    expect(back).toEqual({ f: "a\u0000b", t: "🚀" });
  });

  it("refuses a field a layout does not have", () => {
    expect(() => tupleField(CALL_STATE_CALL, "session_id" as never, "j.value")).toThrow(/no field/);
  });
});
