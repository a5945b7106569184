// The call path's args_hash (native SHA-256 on Node) is src/shared's argsHash, value for value.
import fc from "fast-check";
import { expect, test } from "vitest";
import { callArgsHash } from "../../src/sdk/args-hash.ts";
import { argsHash } from "../../src/shared/hash.ts";

test("SPEC §1.3 fixtures", () => {
  expect(callArgsHash(undefined)).toBe("44136fa355b3");
  expect(callArgsHash({ query: "quarterly revenue", limit: 25, filters: { region: "EMEA", active: true } })).toBe("52a4fe5fc814");
  for (const unrepresentable of [Number.NaN, { a: Infinity }, 10n, (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })()]) {
    expect(callArgsHash(unrepresentable)).toBe("000000000000");
  }
  expect(callArgsHash(null)).toBe(argsHash(null));
  expect(callArgsHash(() => 1)).toBe(argsHash(() => 1));
  expect(callArgsHash({ toJSON: () => { throw new Error("no"); } })).toBe("000000000000");
});

test("any value, lone surrogates and non-ASCII included, hashes as argsHash does", () => {
  fc.assert(
    fc.property(fc.oneof(fc.anything({ withBigInt: false }), fc.string({ unit: "binary" }), fc.dictionary(fc.string({ unit: "binary" }), fc.jsonValue())), (value) => {
      expect(callArgsHash(value)).toBe(argsHash(value));
    }),
    { numRuns: 2_000 },
  );
});
