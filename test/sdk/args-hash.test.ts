// The call path's args_hash (native SHA-256 on Node) is src/shared's argsHash, value for value,
// and the digest a call's payload waits for (Destination.enqueueCall) is in before it is sent.
import fc from "fast-check";
import { expect, test } from "vitest";
import { argsHashText, callArgsHash, hashOfArgsText } from "../../src/sdk/args-hash.ts";
import { DEFAULT_BUFFER_TUNING } from "../../src/sdk/buffer.ts";
import { Destination, enqueueCallOn } from "../../src/sdk/destination.ts";
import type { PostJson } from "../../src/sdk/transport.ts";
import { argsHash } from "../../src/shared/hash.ts";

test("SPEC §1.3 fixtures", () => {
  expect(callArgsHash(undefined)).toBe("44136fa355b3");
  expect(callArgsHash({ query: "quarterly revenue", limit: 25, filters: { region: "EMEA", active: true } })).toBe("52a4fe5fc814");
  for (const unrepresentable of [Number.NaN, { a: Infinity }, 10n, (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()]) {
    expect(callArgsHash(unrepresentable)).toBe("000000000000");
    expect(argsHashText(unrepresentable)).toBeNull();
  }
  expect(callArgsHash(null)).toBe(argsHash(null));
  expect(callArgsHash(() => 1)).toBe(argsHash(() => 1));
  expect(callArgsHash({ toJSON: () => { throw new Error("no"); } })).toBe("000000000000");
});

test("any value, lone surrogates and non-ASCII included, hashes as argsHash does, in one step or two", () => {
  fc.assert(
    fc.property(fc.oneof(fc.anything({ withBigInt: false }), fc.string({ unit: "binary" }), fc.dictionary(fc.string({ unit: "binary" }), fc.jsonValue())), (value) => {
      expect(callArgsHash(value)).toBe(argsHash(value));
      expect(hashOfArgsText(argsHashText(value))).toBe(argsHash(value));
    }),
    { numRuns: 2_000 },
  );
});

// ---- the digest a call payload waits for ----

interface Sent {
  batch: { args_hash: string; n: number }[];
  body: string;
}

function destinationWith(flushAtPayloads: number): { destination: Destination; sent: Sent[] } {
  const sent: Sent[] = [];
  const post: PostJson = async (_url, _key, body) => {
    sent.push({ batch: (JSON.parse(body) as Sent).batch, body });
    return { status: 202, retryAfterMs: null };
  };
  const tuning = { ...DEFAULT_BUFFER_TUNING, flushAtPayloads, flushIntervalMs: 60_000 };
  return { destination: new Destination("http://127.0.0.1:9", `mp_live_digest_${Date.now()}`, post, tuning, 1_000), sent };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

test("every call payload is sent with the digest of its text, and never with the text", async () => {
  const { destination, sent } = destinationWith(3);
  const args = [{ q: "secret-one", b: [1, { z: 2, y: 3 }] }, undefined, { n: Number.NaN }];
  args.forEach((value, n) => destination.enqueueCall({ n, args_hash: "" }, argsHashText(value)));
  await settle();
  expect(sent).toHaveLength(1);
  expect(sent[0]!.batch.map((payload) => payload.args_hash)).toEqual(args.map((value) => argsHash(value)));
  expect(sent[0]!.body).not.toContain("secret-one");
});

test("the exit flush sends the digests too", async () => {
  const { destination, sent } = destinationWith(30);
  destination.enqueueCall({ n: 0, args_hash: "" }, argsHashText({ a: 1 }));
  await destination.buffer.flushFinal(500);
  expect(sent.flatMap((s) => s.batch).map((payload) => payload.args_hash)).toEqual([argsHash({ a: 1 })]);
});

test("waiting texts are bounded: at 100 calls, or 64 Ki characters, every digest is taken at once", () => {
  const { destination } = destinationWith(1_000);
  const payloads = Array.from({ length: 100 }, (_, n) => ({ n, args_hash: "" }));
  payloads.slice(0, 99).forEach((payload) => destination.enqueueCall(payload, argsHashText({ n: payload.n })));
  expect(payloads.slice(0, 99).every((payload) => payload.args_hash === "")).toBe(true); // just under: still waiting
  destination.enqueueCall(payloads[99]!, argsHashText({ n: 99 }));
  expect(payloads.map((payload) => payload.args_hash)).toEqual(payloads.map((payload) => argsHash({ n: payload.n })));

  const small = { n: 0, args_hash: "" };
  destination.enqueueCall(small, '"a"');
  const justUnder = { n: 1, args_hash: "" };
  destination.enqueueCall(justUnder, JSON.stringify("x".repeat(64 * 1024 - 6)));
  expect([small.args_hash, justUnder.args_hash]).toEqual(["", ""]); // 3 + 65,532 characters waiting
  const over = { n: 2, args_hash: "" };
  destination.enqueueCall(over, "1");
  expect([small, justUnder, over].map((payload) => payload.args_hash)).toEqual([
    argsHash("a"),
    argsHash("x".repeat(64 * 1024 - 6)),
    argsHash(1),
  ]);
});

test("a destination made by an older copy of the package (no enqueueCall) gets the payload with its digest in", () => {
  const queued: { args_hash: string }[] = [];
  const older = { enqueue: (payload: { args_hash: string }) => queued.push(payload) } as unknown as Destination;
  enqueueCallOn(older, { args_hash: "" }, argsHashText({ q: "x" }));
  expect(queued).toEqual([{ args_hash: argsHash({ q: "x" }) }]);
  const { destination } = destinationWith(30);
  const payload = { n: 0, args_hash: "" };
  enqueueCallOn(destination, payload, argsHashText({ q: "x" }));
  expect(payload.args_hash).toBe(""); // a current one takes the digest when it sends
});
