// The SDK's pure parts: is_empty, outcomes, agreement comparison, options, session ids, constants.
import fc from "fast-check";
import { describe, expect, test, vi } from "vitest";
import * as sdk from "../../src/sdk/index.ts";
import { AgreementTracker, valueAtPath, valueInResult, valuesAgree } from "../../src/sdk/agreement.ts";
import { DEFAULT_BUFFER_TUNING } from "../../src/sdk/buffer.ts";
import { isEmptyResult, isEmptyValue } from "../../src/sdk/empty.ts";
import { resolveOptions, normaliseEndpoint } from "../../src/sdk/options.ts";
import { outcomeOfHandler, outcomeOfToolCallback } from "../../src/sdk/outcome.ts";
import { destinationFor } from "../../src/sdk/destination.ts";
import { newSessionId, transportKindOf } from "../../src/sdk/session.ts";
import { transportKind } from "../../src/sdk/shapes.ts";
import packageJson from "../../package.json" with { type: "json" };

describe("the numbers SPEC §4 fixes", () => {
  test("are the defaults the buffer and transport use", () => {
    expect(sdk.FLUSH_AT_PAYLOADS).toBe(30);
    expect(sdk.FLUSH_INTERVAL_MS).toBe(5_000);
    expect(sdk.MAX_BUFFERED_PAYLOADS).toBe(1_000);
    expect(sdk.MAX_PAYLOADS_PER_REQUEST).toBe(500);
    expect(sdk.SEND_TIMEOUT_MS).toBe(10_000);
    expect(sdk.EXIT_FLUSH_TIMEOUT_MS).toBe(1_000);
    expect(sdk.DEFAULT_AGREE_WINDOW_MS).toBe(300_000);
    expect(DEFAULT_BUFFER_TUNING).toEqual({ flushAtPayloads: 30, flushIntervalMs: 5_000, maxBuffered: 1_000, maxPerRequest: 500 });
  });

  test("the sdk field names this package and its version, within 64 characters", () => {
    expect(sdk.SDK_ID).toBe(`mcpulse-edge-ts/${packageJson.version}`);
    expect(sdk.SDK_ID.length).toBeLessThanOrEqual(64);
  });

  test("the public surface is watch, its option types and the constants", () => {
    expect(Object.keys(sdk).sort()).toEqual(
      [
        "DEFAULT_AGREE_WINDOW_MS",
        "EXIT_FLUSH_TIMEOUT_MS",
        "FLUSH_AT_PAYLOADS",
        "FLUSH_INTERVAL_MS",
        "MAX_BUFFERED_PAYLOADS",
        "MAX_PAYLOADS_PER_REQUEST",
        "SDK_ID",
        "SEND_TIMEOUT_MS",
        "watch",
      ].sort(),
    );
  });
});

describe("is_empty", () => {
  const text = (value: string) => ({ content: [{ type: "text", text: value }] });
  test.each([
    ["no content parts", { content: [] }, true],
    ["content missing", {}, true],
    ["blank text", text("   \n"), true],
    ["empty text", text(""), true],
    ["[]", text("[]"), true],
    ["[ ] with JSON whitespace", text(" [ \n ] "), true],
    ["{}", text("{}"), true],
    ['""', text('""'), true],
    ["null", text("null"), true],
    ["0 is an answer", text("0"), false],
    ["false is an answer", text("false"), false],
    ["prose", text("no results"), false],
    ['"[]" as a JSON string is an answer', text('"[]"'), false],
    ["[0]", text("[0]"), false],
    ['{"count":0}', text('{"count":0}'), false],
    ["two empty parts", { content: [{ type: "text", text: "" }, { type: "text", text: "" }] }, false],
    ["one image part", { content: [{ type: "image", data: "", mimeType: "image/png" }] }, false],
    ["structuredContent {} decides over prose", { ...text("lots of prose"), structuredContent: {} }, true],
    ["structuredContent [] decides", { ...text("x"), structuredContent: [] }, true],
    ["structuredContent null decides", { ...text("x"), structuredContent: null }, true],
    ['structuredContent "" decides', { ...text("x"), structuredContent: "" }, true],
    ["structuredContent {count: 0} decides over []", { ...text("[]"), structuredContent: { count: 0 } }, false],
    ["structuredContent 0 is an answer", { content: [], structuredContent: 0 }, false],
  ])("%s", (_name, result, expected) => {
    expect(isEmptyResult(result)).toBe(expected);
  });

  test("values", () => {
    expect([null, "", [], {}].map(isEmptyValue)).toEqual([true, true, true, true]);
    expect([0, false, "x", [0], { a: undefined }].map(isEmptyValue)).toEqual([false, false, false, false, false]);
  });
});

describe("outcomes", () => {
  test("McpServer: the wrapped callback is the source of truth", () => {
    const ok = { content: [] };
    const err = { content: [], isError: true };
    expect(outcomeOfToolCallback({ ran: false, status: "pending", result: undefined }, false, err)).toBe("bad_args");
    expect(outcomeOfToolCallback({ ran: false, status: "pending", result: undefined }, true, undefined)).toBe("bad_args");
    expect(outcomeOfToolCallback({ ran: true, status: "threw", result: undefined }, false, err)).toBe("crashed");
    expect(outcomeOfToolCallback({ ran: true, status: "returned", result: err }, false, err)).toBe("tool_error");
    // The callback returned fine, but the SDK turned the result into an error (output schema).
    expect(outcomeOfToolCallback({ ran: true, status: "returned", result: ok }, false, err)).toBe("crashed");
    expect(outcomeOfToolCallback({ ran: true, status: "returned", result: ok }, true, undefined)).toBe("crashed");
    expect(outcomeOfToolCallback({ ran: true, status: "returned", result: ok }, false, ok)).toBe("ok");
  });

  test("low-level Server: −32602 is bad_args, any other throw crashed", () => {
    expect(outcomeOfHandler(true, { code: -32602 }, undefined)).toBe("bad_args");
    expect(outcomeOfHandler(true, { code: -32603 }, undefined)).toBe("crashed");
    expect(outcomeOfHandler(true, new Error("x"), undefined)).toBe("crashed");
    expect(outcomeOfHandler(true, "a string", undefined)).toBe("crashed");
    expect(outcomeOfHandler(false, undefined, { content: [], isError: true })).toBe("tool_error");
    expect(outcomeOfHandler(false, undefined, { content: [], isError: false })).toBe("ok");
  });
});

describe("agreement", () => {
  test("25.22, 25.220 and \"25.22\" are the same number", () => {
    expect(valuesAgree(25.22, 25.22)).toBe(true);
    expect(valuesAgree(25.22, "25.220")).toBe(true);
    expect(valuesAgree("25.22", 25.22)).toBe(true);
    expect(valuesAgree(" 2.5e1 ", 25)).toBe(true);
  });

  test("relative tolerance 1e-4: at, just under and just over", () => {
    expect(valuesAgree(10_000, 10_000.5)).toBe(true); // 5e-5
    expect(valuesAgree(10_000, 10_000.99)).toBe(true); // 9.9e-5
    expect(valuesAgree(10_000, 10_001.01)).toBe(false); // 1.01e-4
    expect(valuesAgree(0, 0)).toBe(true);
    expect(valuesAgree(0, 1e-9)).toBe(false);
    expect(valuesAgree(-5, 5)).toBe(false);
  });

  test("strings, booleans and objects compare exactly", () => {
    expect(valuesAgree("EMEA", "EMEA")).toBe(true);
    expect(valuesAgree("EMEA", "emea")).toBe(false);
    expect(valuesAgree("25.22 USD", 25.22)).toBe(false);
    expect(valuesAgree(true, true)).toBe(true);
    expect(valuesAgree(true, 1)).toBe(false);
    expect(valuesAgree({ a: 1, b: [2] }, { b: [2], a: 1 })).toBe(true);
    expect(valuesAgree(null, null)).toBe(true);
  });

  test("paths reach into structuredContent, then JSON text", () => {
    expect(valueAtPath({ a: { b: [{ c: 3 }] } }, "a.b.0.c")).toBe(3);
    expect(valueAtPath({ a: 1 }, "a.b")).toBeUndefined();
    expect(valueAtPath({ a: 1 }, "constructor")).toBeUndefined();
    expect(valueInResult({ content: [], structuredContent: { x: { y: 2 } } }, "x.y")).toBe(2);
    expect(valueInResult({ content: [{ type: "text", text: '{"x":{"y":"2.0"}}' }] }, "x.y")).toBe("2.0");
    expect(valueInResult({ content: [{ type: "text", text: "prose" }] }, "x")).toBeUndefined();
  });

  test("each value is compared with the other tools' latest values inside the window only", () => {
    const tracker = new AgreementTracker();
    expect(tracker.observe("liquidity", "b_tool", 25.22, 1_000, 300_000)).toEqual([]);
    expect(tracker.observe("liquidity", "b_tool", 25.3, 2_000, 300_000)).toEqual([]); // same tool: no pair
    expect(tracker.observe("liquidity", "a_tool", "25.300", 3_000, 300_000)).toEqual([
      { field: "liquidity", tool_a: "a_tool", tool_b: "b_tool", agreed: true },
    ]);
    expect(tracker.observe("other", "c_tool", 1, 3_000, 300_000)).toEqual([]); // fields never mix
    // b_tool's latest is at 2,000: exactly at the window edge it still counts, 1 ms later it does not.
    expect(tracker.observe("liquidity", "c_tool", 9, 302_000, 300_000)).toEqual([
      { field: "liquidity", tool_a: "b_tool", tool_b: "c_tool", agreed: false },
      { field: "liquidity", tool_a: "a_tool", tool_b: "c_tool", agreed: false },
    ]);
    expect(tracker.observe("liquidity", "d_tool", 9, 303_001, 300_000)).toEqual([
      { field: "liquidity", tool_a: "c_tool", tool_b: "d_tool", agreed: true },
    ]);
  });
});

describe("options", () => {
  test("anything but an object with a usable key disables", () => {
    for (const raw of [undefined, null, "mp_live_x", 42, [], {}, { key: "" }, { key: "   " }, { key: 7 }]) {
      expect(resolveOptions(raw).ok).toBe(false);
    }
    expect(resolveOptions({ key: "k", enabled: false }).ok).toBe(false);
    expect(resolveOptions({ key: "k", endpoint: "ftp://x" }).ok).toBe(false);
    expect(resolveOptions({ key: "k", endpoint: "not a url" }).ok).toBe(false);
    expect(resolveOptions({ key: "k", endpoint: "http://127.0.0.1:8787" })).toMatchObject({
      ok: true,
      options: { endpoint: "http://127.0.0.1:8787", debug: false },
    });
  });

  test("endpoint is required: no default host (SPEC §4)", () => {
    expect(sdk).not.toHaveProperty("DEFAULT_ENDPOINT");
    for (const endpoint of [undefined, null, "", "   ", 3, {}, "127.0.0.1:8787", "ws://127.0.0.1:8787", "file:///tmp/x", "javascript:alert(1)", "http://"]) {
      const verdict = resolveOptions({ key: "k", endpoint });
      expect({ endpoint, ok: verdict.ok }).toEqual({ endpoint, ok: false });
    }
    const missing = resolveOptions({ key: "k", debug: true });
    expect(missing).toEqual({ ok: false, reason: expect.stringContaining("no endpoint"), debug: true });
    expect(resolveOptions({ key: "k", endpoint: " https://x.example/ " })).toMatchObject({ ok: true, options: { endpoint: "https://x.example" } });
  });

  test("agree: names capped in code points, at most 64 fields of at most 64 tools (SPEC §1.2)", () => {
    const agreeOf = (agree: unknown) => {
      const verdict = resolveOptions({ key: "k", endpoint: "http://127.0.0.1:8787", agree });
      return verdict.ok ? verdict.options.agree : undefined;
    };
    const emoji = (n: number) => "🔍".repeat(n);
    // 200 code points is a valid tool name even though it is 400 UTF-16 units; 201 is not.
    const names = agreeOf({ price: { [emoji(200)]: "a", [emoji(201)]: "b", t: "c" } });
    expect([...names!.get("price")!.keys()]).toEqual([emoji(200), "t"]);
    const fields = agreeOf({ [emoji(128)]: { t: "a" }, [emoji(129)]: { t: "a" } });
    expect([...fields!.keys()]).toEqual([emoji(128)]);
    const many = (n: number, make: (i: number) => string) => Object.fromEntries(Array.from({ length: n }, (_, i) => [make(i), "v"]));
    for (const [count, kept] of [[63, 63], [64, 64], [65, 64]] as const) {
      expect(agreeOf({ f: many(count, (i) => `tool_${i}`) })!.get("f")!.size, `${count} tools`).toBe(kept);
      const wide = Object.fromEntries(Array.from({ length: count }, (_, i) => [`field_${i}`, { t: "v" }]));
      expect(agreeOf(wide)!.size, `${count} fields`).toBe(kept);
    }
  });

  test("a trailing slash is ignored", () => {
    expect(normaliseEndpoint("http://127.0.0.1:8787/")).toBe("http://127.0.0.1:8787");
    expect(normaliseEndpoint("http://127.0.0.1:8787//")).toBe("http://127.0.0.1:8787");
    expect(normaliseEndpoint("https://x.example/base/")).toBe("https://x.example/base");
  });

  test("agreeWindowMs: a positive whole number up to a day, else the default", () => {
    const windowOf = (agreeWindowMs: unknown) => {
      const verdict = resolveOptions({ key: "k", endpoint: "http://127.0.0.1:8787", agreeWindowMs });
      return verdict.ok ? verdict.options.agreeWindowMs : undefined;
    };
    expect(windowOf(undefined)).toBe(300_000);
    expect(windowOf(60_000)).toBe(60_000);
    expect(windowOf(86_400_000)).toBe(86_400_000);
    expect(windowOf(86_400_001)).toBe(300_000);
    expect(windowOf(0)).toBe(300_000);
    expect(windowOf(1.5)).toBe(300_000);
    expect(windowOf("60000")).toBe(300_000);
  });

  test("agree and policy declarations are read leniently", () => {
    const verdict = resolveOptions({
      key: "k",
      endpoint: "http://127.0.0.1:8787",
      policy: { pay: { requires_authorization: true }, bad: "yes" },
      agree: { price: { a: "x.y", b: "", c: 3 }, empty: {}, ["f".repeat(129)]: { a: "x" } },
    });
    if (!verdict.ok) throw new Error("expected ok");
    expect([...verdict.options.policy]).toEqual([["pay", { requires_authorization: true, requires_verified_identity: false }]]);
    expect([...verdict.options.agree.keys()]).toEqual(["price"]);
    expect([...verdict.options.agree.get("price")!.keys()]).toEqual(["a"]);
  });
});

test("session ids are s_ + 12 lowercase hex, random", () => {
  const ids = new Set(Array.from({ length: 200 }, newSessionId));
  expect(ids.size).toBe(200);
  for (const id of ids) expect(id).toMatch(/^s_[0-9a-f]{12}$/);
});

test("transport kinds come from the transport's class", () => {
  class StdioServerTransport {}
  class StreamableHTTPServerTransport {}
  class WebStandardStreamableHTTPServerTransport {}
  class SSEServerTransport {}
  class InMemoryTransport {}
  expect(transportKind(new StdioServerTransport())).toBe("stdio");
  expect(transportKind(new StreamableHTTPServerTransport())).toBe("http");
  expect(transportKind(new WebStandardStreamableHTTPServerTransport())).toBe("http");
  expect(transportKind(new SSEServerTransport())).toBe("sse");
  expect(transportKind(new InMemoryTransport())).toBe("unknown");
  expect(transportKindOf(new InMemoryTransport())).toBe("memory");
  expect(transportKindOf(new StdioServerTransport())).toBe("stdio");
  expect(transportKind(undefined)).toBe("unknown");
});

test("the process's own session id is drawn at first use, not when the destination is made (workerd forbids random values at module scope)", () => {
  const random = vi.spyOn((globalThis as unknown as { crypto: { getRandomValues(a: Uint8Array): Uint8Array } }).crypto, "getRandomValues");
  const destination = destinationFor("http://127.0.0.1:9", `mp_live_lazy_${Date.now()}`);
  expect(random).not.toHaveBeenCalled();
  const id = destination.processSessionId;
  expect(random).toHaveBeenCalledTimes(1);
  expect(destination.processSessionId).toBe(id);
  random.mockRestore();
});

test("is_empty's text test agrees with JSON.parse on arbitrary JSON-ish text (property)", () => {
  const isEmptyByParse = (text: string) => {
    if (/^\s*$/.test(text)) return true; // blank
    try {
      const value: unknown = JSON.parse(text);
      return value === null || value === "" || (Array.isArray(value) && value.length === 0) ||
        (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);
    } catch {
      return false;
    }
  };
  const pieces = ["[", "]", "{", "}", '"', '""', "null", "nul", " ", "\t", "\n", "\r", "\v", "\u00a0", "0", "a", ",", ":", "\\"];
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 8 }), (parts) => {
      const text = parts.join("");
      expect(isEmptyResult({ content: [{ type: "text", text }] })).toBe(isEmptyByParse(text));
    }),
    { numRuns: 5_000 },
  );
});

test("agreement compares symmetrically, and a number always agrees with its own text (property)", () => {
  const value = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ maxLength: 6 }), fc.boolean(), fc.constant(null));
  fc.assert(
    fc.property(value, value, (a, b) => {
      expect(valuesAgree(a, b)).toBe(valuesAgree(b, a));
    }),
    { numRuns: 3_000 },
  );
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
      expect(valuesAgree(n, String(n))).toBe(true);
      const near = n * (1 + 5e-5); // half the tolerance away
      if (Number.isFinite(near)) expect(valuesAgree(n, near)).toBe(true);
    }),
    { numRuns: 3_000 },
  );
});
