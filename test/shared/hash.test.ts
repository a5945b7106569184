// SHA-256 and the size/hash helpers (SPEC §1.3), checked against node:crypto and @noble/hashes.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import fc from "fast-check";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { codePointLength, schemaHash, sha256Hex, sha256Hex12, sha256HexPrefix, utf16Length, argsHash } from "../../src/shared/index.ts";

const nodeHex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("sha256Hex", () => {
  it("matches the FIPS 180-4 test vectors", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("is right at every padding boundary (55, 56, 63, 64, 65 bytes and multi-block)", () => {
    for (const length of [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4095, 4096, 70_000]) {
      const text = "a".repeat(length);
      expect(sha256Hex(text)).toBe(nodeHex(text));
    }
  });

  it("hashes the UTF-8 bytes of any string (fast-check against node:crypto and noble)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => {
        expect(sha256Hex(text)).toBe(nodeHex(text));
        expect(sha256Hex(text)).toBe(bytesToHex(sha256(new TextEncoder().encode(text))));
      }),
      { numRuns: 500 },
    );
  });

  it("writes lone surrogates as U+FFFD, as UTF-8 encoders do", () => {
    expect(sha256Hex("\ud800")).toBe(nodeHex("\ufffd"));
    expect(sha256Hex("a\udc00b")).toBe(nodeHex("a\ufffdb"));
  });

  it("gives prefixes of any length", () => {
    const full = sha256Hex("prefix");
    for (const chars of [1, 7, 8, 9, 12, 63, 64]) expect(sha256HexPrefix("prefix", chars)).toBe(full.slice(0, chars));
    expect(sha256Hex12("prefix")).toBe(full.slice(0, 12));
  });

  it("stays right after a long input grew the shared buffer", () => {
    sha256Hex("é".repeat(100_000));
    expect(sha256Hex("abc")).toBe(nodeHex("abc"));
  });
});

describe("sizes", () => {
  it("utf16Length counts UTF-16 code units (SPEC §1.3's wart)", () => {
    expect(utf16Length('"café"')).toBe(6);
    expect(utf16Length("café")).toBe(4);
    expect(utf16Length("🚀")).toBe(2);
    expect(utf16Length("")).toBe(0);
  });

  it("codePointLength counts code points, a lone surrogate as one", () => {
    expect(codePointLength("café")).toBe(4);
    expect(codePointLength("🚀🚀")).toBe(2);
    expect(codePointLength("\ud800\ud800")).toBe(2);
    expect(codePointLength("a\udc00")).toBe(2);
  });
});

describe("schemaHash", () => {
  it("is the args hash of the input schema, {} when absent", () => {
    const schema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] };
    expect(schemaHash(schema)).toBe(argsHash(schema));
    expect(schemaHash(schema)).toBe(nodeHex('{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}').slice(0, 12));
    expect(schemaHash(undefined)).toBe("44136fa355b3");
  });
});
