// RFC 8785 canonical JSON and args_hash (SPEC §1.3): the generated conformance fixture, the
// JSON.stringify value rules, the failure cases, and a differential test against the npm package.
import canonicalizePackage from "canonicalize";
import fc from "fast-check";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { argsHash, CanonicalizeError, canonicalize, UNREPRESENTABLE_HASH } from "../../src/shared/index.ts";
import { referenceCanonicalize } from "./reference-canonicalize.ts";

type CanonicalCase = {
  name: string;
  input?: unknown;
  input_json?: string;
  input_absent?: true;
  canonical: string;
  args_hash: string;
};
const fixture = JSON.parse(
  readFileSync(new URL("../fixtures/canonical.json", import.meta.url), "utf8"),
) as { cases: CanonicalCase[] };

function inputOf(testCase: CanonicalCase): unknown {
  if (testCase.input_absent) return undefined;
  return testCase.input_json !== undefined ? JSON.parse(testCase.input_json) : testCase.input;
}

const nodeHex12 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 12);

describe("canonical.json fixture", () => {
  it("has at least 23 cases with unique names", () => {
    expect(fixture.cases.length).toBeGreaterThanOrEqual(23);
    expect(new Set(fixture.cases.map((c) => c.name)).size).toBe(fixture.cases.length);
  });

  it.each(fixture.cases.map((c) => [c.name, c] as const))("%s", (_name, testCase) => {
    const input = inputOf(testCase);
    if (!testCase.input_absent) expect(canonicalize(input)).toBe(testCase.canonical);
    expect(argsHash(input)).toBe(testCase.args_hash);
    // The hash is SHA-256 of the canonical text, checked with an independent implementation.
    expect(nodeHex12(testCase.canonical)).toBe(testCase.args_hash);
  });

  it("covers every trap of SPEC §1.3 and the seed page's table", () => {
    const byName = new Map(fixture.cases.map((c) => [c.name, c]));
    const canonicalOf = (name: string) => byName.get(name)?.canonical;
    // Spot checks written out from the RFC and SPEC rules, independent of the implementation.
    expect(canonicalOf("UTF-16 key order above the BMP")).toBe('{"z":"ascii","\u{1F680}":"rocket","\uFFFD":"replacement"}');
    expect(canonicalOf("non-ASCII unescaped")).toBe('{"city":"Zürich","cjk":"東京","emoji":"🚀","word":"café"}');
    expect(canonicalOf("HTML characters unescaped")).toBe('{"html":"<a href=\\"/docs?a=1&b=2\\">x</a>"}');
    expect(canonicalOf("short escapes")).toBe('{"s":"\\b\\t\\n\\f\\r\\"\\\\"}');
    expect(canonicalOf("other controls as lowercase \\u00xx")).toBe('{"s":"\\u0000\\u0001\\u000b\\u000e\\u001f\u007f"}');
    expect(canonicalOf("1e21")).toBe("[1e+21]");
    expect(canonicalOf("1e-7")).toBe("[1e-7]");
    expect(canonicalOf("0.000001")).toBe("[0.000001]");
    expect(canonicalOf("negative zero")).toBe("[0]");
    expect(canonicalOf("smallest subnormal")).toBe("[5e-324]");
    expect(canonicalOf("largest double")).toBe("[1.7976931348623157e+308]");
    expect(canonicalOf("integral floats")).toBe("[1,100,100,100000000000000000000,-5]");
    expect(canonicalOf("integers beyond 2^53 are doubles")).toBe("[9007199254740992,18446744073709552000]");
    expect(canonicalOf("nested sorting")).toBe('{"a":0,"z":{"x":[{"c":3,"d":4}],"y":{"a":1,"b":2}}}');
    expect(canonicalOf("arrays kept in order")).toBe('{"ids":[3,1,2],"names":["b","a"]}');
    expect(canonicalOf("empty containers nested")).toBe('{"a":{},"b":[]}');
    expect(canonicalOf("the empty key")).toBe('{"":0,"a":1}');
    expect(canonicalOf("lone surrogate")).toBe('{"s":"\\ud800x\\udfff"}');
    // RFC 8785 §3.2.2 / appendix: the RFC's own expected output.
    expect(canonicalOf("RFC 8785 appendix example")).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
    // SPEC §1.3's stated hashes.
    expect(byName.get("a realistic call")?.args_hash).toBe("52a4fe5fc814");
    expect(byName.get("a realistic call, keys reordered")?.args_hash).toBe("52a4fe5fc814");
    expect(byName.get("absent arguments")?.args_hash).toBe("44136fa355b3");
    // -0 and 1.0 must survive the file as JSON text.
    expect(Object.is((inputOf(byName.get("negative zero")!) as number[])[0], -0)).toBe(true);
  });
});

describe("canonicalize follows JSON.stringify's value rules", () => {
  it("drops undefined, function and symbol members; writes them as null in arrays", () => {
    const value = { a: undefined, b: () => 1, c: Symbol("x"), d: 1, e: [undefined, () => 1, Symbol("y")] };
    expect(canonicalize(value)).toBe('{"d":1,"e":[null,null,null]}');
  });

  it("writes array holes as null", () => {
    // eslint-disable-next-line no-sparse-arrays
    expect(canonicalize([1, , 3])).toBe("[1,null,3]");
  });

  it("honours toJSON, passing the key like JSON.stringify", () => {
    const keys: string[] = [];
    const spy = { toJSON: (key: string) => (keys.push(key), { z: 1, a: 2 }) };
    expect(canonicalize({ outer: spy, list: [spy] })).toBe('{"list":[{"a":2,"z":1}],"outer":{"a":2,"z":1}}');
    expect(keys.sort()).toEqual(["0", "outer"]);
    expect(canonicalize(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)))).toBe('"2026-01-02T03:04:05.006Z"');
    expect(canonicalize({ when: new Date(Number.NaN) })).toBe('{"when":null}');
  });

  it("unwraps boxed primitives", () => {
    // eslint-disable-next-line no-new-wrappers
    expect(canonicalize([new Number(-0), new String("s"), new Boolean(false)])).toBe('[0,"s",false]');
  });

  it("serialises non-plain objects by their own enumerable keys", () => {
    expect(canonicalize(new Map([["a", 1]]))).toBe("{}");
    expect(canonicalize(new Uint8Array([7, 8]))).toBe('{"0":7,"1":8}');
    expect(canonicalize(Object.create({ inherited: 1 }, { own: { value: 2, enumerable: true } }))).toBe('{"own":2}');
  });

  it("matches JSON.stringify for strings, including lone surrogates", () => {
    for (const s of ["\ud83d", "\ude80x", "a\u2028b\u2029", "\u007f\u0080", "\u{1F680}"]) {
      expect(canonicalize(s)).toBe(JSON.stringify(s));
    }
  });

  it("accepts the same object twice side by side (not a cycle)", () => {
    const shared = { x: 1 };
    expect(canonicalize({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });

  it.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["nested NaN", { a: [1, Number.NaN] }],
    ["BigInt", 10n],
    ["nested BigInt", { a: 1n }],
    ["top-level undefined", undefined],
    ["top-level function", () => 1],
    ["top-level symbol", Symbol("s")],
  ])("throws CanonicalizeError on %s", (_name, value) => {
    expect(() => canonicalize(value)).toThrow(CanonicalizeError);
  });

  it("throws on cycles through objects and arrays", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => canonicalize(cyclic)).toThrow(CanonicalizeError);
    const list: unknown[] = [1];
    list.push({ back: list });
    expect(() => canonicalize(list)).toThrow(CanonicalizeError);
  });
});

describe("argsHash never throws", () => {
  it("hashes absent arguments as {} and null as a value", () => {
    expect(argsHash(undefined)).toBe("44136fa355b3");
    expect(argsHash({})).toBe("44136fa355b3");
    expect(argsHash(null)).toBe(nodeHex12("null"));
    expect(argsHash(null)).not.toBe(argsHash(undefined));
  });

  it("hashes what cannot be represented as 000000000000", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const throwingGetter = Object.defineProperty({}, "boom", {
      enumerable: true,
      get() {
        throw new Error("getter");
      },
    });
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    for (const value of [Number.NaN, Infinity, -Infinity, 1n, { n: 2n }, cyclic, throwingGetter, () => 1, Symbol("s"), deep]) {
      expect(argsHash(value)).toBe(UNREPRESENTABLE_HASH);
    }
    expect(UNREPRESENTABLE_HASH).toBe("000000000000");
  });

  it("returns 12 lowercase hex characters for any value (fast-check, cycles included)", () => {
    const withCycles = fc.anything({ withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true, withObjectString: true }).map((value) => {
      if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
        try {
          (value as Record<string, unknown>).cycle = value;
        } catch {
          // a typed array or a frozen value: keep it acyclic
        }
      }
      return value;
    });
    fc.assert(
      fc.property(fc.oneof(fc.anything(), withCycles), (value) => {
        expect(argsHash(value)).toMatch(/^[0-9a-f]{12}$/);
      }),
      { numRuns: 500 },
    );
  });
});

describe("differential test against the canonicalize package", () => {
  it("agrees on generated JSON values without lone surrogates", () => {
    // fc.jsonValue has no NaN/Infinity and -0 only as a number; the package refuses lone surrogates.
    fc.assert(
      fc.property(fc.jsonValue({ depthSize: "medium" }), (value) => {
        expect(canonicalize(value)).toBe(canonicalizePackage(value));
      }),
      { numRuns: 1000 },
    );
  });

  it("agrees on full-Unicode strings and keys, doubles and nested containers", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 12 });
    const leaf = fc.oneof(text, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean(), fc.constant(null));
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, leaf, fc.array(tie("node"), { maxLength: 5 }), fc.dictionary(text, tie("node"), { maxKeys: 5 })),
    })).node;
    fc.assert(
      fc.property(tree, (value) => {
        expect(canonicalize(value)).toBe(canonicalizePackage(value));
      }),
      { numRuns: 1000 },
    );
  });

  it("differs from the package only where SPEC §1.3 requires: lone surrogates hash instead of throwing", () => {
    expect(() => canonicalizePackage("\ud800")).toThrow();
    expect(canonicalize("\ud800")).toBe('"\\ud800"');
  });
});

describe("differential test against the plain reference serializer", () => {
  // canonicalize hands already-canonical subtrees to JSON.stringify; the reference never does.
  // Both must agree on everything JavaScript can hold: toJSON, boxed values, Dates, Maps, typed
  // and sparse arrays, null prototypes, undefined and functions, unsorted keys at any depth.
  const outcome = (serialize: (value: unknown) => string, value: unknown) => {
    try {
      return { text: serialize(value) };
    } catch {
      return { threw: true };
    }
  };
  const anything = fc.anything({
    maxDepth: 6,
    withBigInt: true,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withObjectString: true,
    withSparseArray: true,
    withTypedArray: true,
    withUnicodeString: true,
  });

  it("agrees on arbitrary JavaScript values", () => {
    fc.assert(
      fc.property(anything, (value) => {
        expect(outcome(canonicalize, value)).toEqual(outcome(referenceCanonicalize, value));
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees on JSON values with toJSON members and deep nesting beyond the shortcut", () => {
    const withToJSON = fc.jsonValue().map((inner) => ({ toJSON: (key: string) => ({ key, inner }) }));
    const deep = fc.jsonValue().map((leaf) => {
      let value: unknown = leaf;
      for (let i = 0; i < 8; i++) value = i % 2 === 0 ? { b: value, a: [value] } : [value, { z: 1 }];
      return value;
    });
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), withToJSON, deep, fc.array(withToJSON), fc.dictionary(fc.string(), withToJSON)), (value) => {
        expect(canonicalize(value)).toBe(referenceCanonicalize(value));
        // And it is JSON.stringify's value, reordered: parsing both gives the same data.
        expect(JSON.parse(canonicalize(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 1000 },
    );
  });

  it("does not take the shortcut through toJSON, boxed values or polluted prototypes", () => {
    const sortedButBoxed = { a: [new String("x")], b: { c: new Number(2) } };
    expect(canonicalize(sortedButBoxed)).toBe('{"a":["x"],"b":{"c":2}}');
    const sortedWithToJSON = { a: { toJSON: () => ({ z: 1, y: 2 }) } };
    expect(canonicalize(sortedWithToJSON)).toBe('{"a":{"y":2,"z":1}}');
    const nested = { a: { b: { c: { d: { f: 1, e: 2 } } } } };
    expect(canonicalize(nested)).toBe('{"a":{"b":{"c":{"d":{"e":2,"f":1}}}}}');
    expect(() => canonicalize({ a: [1, Number.NaN] })).toThrow(CanonicalizeError);
    expect(() => canonicalize({ a: { b: [Infinity] } })).toThrow(CanonicalizeError);
    const integerKeys = { "2": "b", "10": "a" };
    expect(canonicalize(integerKeys)).toBe('{"10":"a","2":"b"}');
  });
});

describe("the fast path (JSON.stringify over a copy with keys in order)", () => {
  it("copies unsorted objects at any depth and reuses sorted ones, with the general writer's text", () => {
    const sortedOutside = { a: [{ d: 1, c: [2, { f: 3, e: 4 }] }], b: "x", z: { y: null, x: true } };
    expect(canonicalize(sortedOutside)).toBe('{"a":[{"c":[2,{"e":4,"f":3}],"d":1}],"b":"x","z":{"x":true,"y":null}}');
    // The value itself is never reordered or changed.
    expect(Object.keys(sortedOutside.z)).toEqual(["y", "x"]);
    const nullPrototype = Object.assign(Object.create(null) as Record<string, unknown>, { b: 1, a: Object.assign(Object.create(null) as object, { d: 2, c: 3 }) });
    expect(canonicalize(nullPrototype)).toBe('{"a":{"c":3,"d":2},"b":1}');
  });

  it("leaves integer-like keys, __proto__ and deep nesting to the general writer", () => {
    // Integer-like keys enumerate first, in numeric order: a copy could not put "-a" before "1".
    expect(canonicalize({ b: 1, "-a": 2, "1": 0 })).toBe('{"-a":2,"1":0,"b":1}');
    // Keys already in order keep their order in a copy, digits included.
    expect(canonicalize({ "1": { b: 1, a: 2 }, "2": 0, a: [{ d: 1, c: 2 }] })).toBe('{"1":{"a":2,"b":1},"2":0,"a":[{"c":2,"d":1}]}');
    const ownProto = JSON.parse('{"z":1,"__proto__":{"b":1,"a":2}}') as object;
    expect(canonicalize(ownProto)).toBe('{"__proto__":{"a":2,"b":1},"z":1}');
    const ownProtoSorted = JSON.parse('{"__proto__":1,"a":{"c":1,"b":2}}') as object;
    expect(canonicalize(ownProtoSorted)).toBe('{"__proto__":1,"a":{"b":2,"c":1}}');
    let deep: unknown = { y: 1, x: 2 };
    for (let i = 0; i < 40; i++) deep = { b: deep, a: i };
    expect(canonicalize(deep)).toBe(referenceCanonicalize(deep));
    const cycle: Record<string, unknown> = { b: 1, a: {} };
    let tail = cycle.a as Record<string, unknown>;
    for (let i = 0; i < 40; i++) tail = tail.next = { z: i };
    tail.back = cycle;
    expect(() => canonicalize(cycle)).toThrow(CanonicalizeError);
  });

  it("agrees with the reference on JSON-parsed objects whose keys sort, enumerate or collide unusually", () => {
    const key = fc.constantFrom("__proto__", "1", "10", "2", "-a", "a", "b", "Z", "é", "🚀", "\uFFFD", "toJSON");
    const leaf = fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, leaf, fc.array(tie("node"), { maxLength: 4 }), fc.array(fc.tuple(key, tie("node")), { maxLength: 6 })),
    })).node;
    // Written as JSON text and parsed, so "__proto__" is an own key, as in a parsed request.
    const asJson = (node: unknown): string =>
      Array.isArray(node) && node.every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === "string" && entry[0] !== "")
        ? `{${node.map(([k, v]) => `${JSON.stringify(k)}:${asJson(v)}`).join(",")}}`
        : Array.isArray(node) ? `[${node.map(asJson).join(",")}]` : JSON.stringify(node);
    fc.assert(
      fc.property(tree, (node) => {
        const value: unknown = JSON.parse(asJson(node));
        expect(canonicalize(value)).toBe(referenceCanonicalize(value));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("the cache of quoted keys", () => {
  it("stays right for long keys, escaped keys and more keys than it holds", () => {
    const long = "k".repeat(65);
    expect(canonicalize({ [long]: 1, b: 2 })).toBe(`{"b":2,"${long}":1}`);
    expect(canonicalize({ [long]: 1, b: 2 })).toBe(`{"b":2,"${long}":1}`);
    expect(canonicalize({ 'q"': 1, "\n": 2, z: 0 })).toBe('{"\\n":2,"q\\"":1,"z":0}');
    expect(canonicalize({ 'q"': 1, "\n": 2, z: 0 })).toBe('{"\\n":2,"q\\"":1,"z":0}');
    const many: Record<string, number> = {};
    for (let i = 0; i < 3000; i++) many[`key${i}`] = i;
    many.a = -1; // out of order, so the object is written key by key
    const expected = referenceCanonicalize(many);
    expect(canonicalize(many)).toBe(expected);
    expect(canonicalize(many)).toBe(expected);
  });
});
