// Description normalisation and hashes (SPEC §1.3): the generated fixture, every step of the
// recipe checked against values written out by hand, and the SPEC's own examples.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  compareByCodePoint,
  DESCRIPTION_STOPWORDS,
  descriptionHash,
  descriptionNorm,
  normaliseDescription,
} from "../../src/shared/index.ts";

type DescriptionCase = {
  name: string;
  text: string;
  normalised: string;
  description_norm: string;
  description_hash: string;
};
const fixture = JSON.parse(
  readFileSync(new URL("../fixtures/descriptions.json", import.meta.url), "utf8"),
) as { cases: DescriptionCase[] };

const nodeHex12 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 12);

describe("descriptions.json fixture", () => {
  it("has at least 20 cases", () => {
    expect(fixture.cases.length).toBeGreaterThanOrEqual(20);
  });

  it.each(fixture.cases.map((c) => [c.name, c] as const))("%s", (_name, testCase) => {
    expect(normaliseDescription(testCase.text)).toBe(testCase.normalised);
    expect(descriptionNorm(testCase.text)).toBe(testCase.description_norm);
    expect(descriptionHash(testCase.text)).toBe(testCase.description_hash);
    expect(nodeHex12(testCase.normalised)).toBe(testCase.description_norm);
    expect(nodeHex12(testCase.text)).toBe(testCase.description_hash);
  });
});

describe("normaliseDescription, step by step", () => {
  it("reproduces the SPEC §1.3 examples", () => {
    expect(normaliseDescription("Search for threads in the user's mailbox")).toBe("mailbox search thread user");
    expect(descriptionNorm("Search for threads in the user's mailbox")).toBe("e4b08657b65c");
    expect(normaliseDescription("read-only; write_once. get/set (maybe)")).toBe("get mayb read set write");
    expect(normaliseDescription("")).toBe("");
    expect(descriptionNorm("")).toBe("e3b0c44298fc");
  });

  it("1. lowercases ASCII A–Z only", () => {
    expect(normaliseDescription("ÉCOLE")).toBe("École");
    expect(normaliseDescription("ŞEHİR")).toBe("Şehİr");
    expect(normaliseDescription("STRAẞE")).toBe("straẞe");
    expect(normaliseDescription("SEARCH Search search")).toBe("search search search");
  });

  it("2. splits on every ASCII whitespace character and nothing else of its kind", () => {
    for (const ws of [" ", "\t", "\n", "\v", "\f", "\r"]) {
      expect(normaliseDescription(`alpha${ws}omega`)).toBe("alpha omega");
    }
    for (const joiner of ["\u00a0", "\u2003", "\u3000", "\u2028", "\u0085"]) {
      expect(normaliseDescription(`alpha${joiner}omega`).split(" ")).toHaveLength(1);
    }
  });

  it("2. splits on each of the 32 ASCII punctuation characters, and on runs of them", () => {
    const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    expect(punctuation).toHaveLength(32);
    for (const ch of punctuation) {
      expect(normaliseDescription(`alpha${ch}omega`)).toBe("alpha omega");
    }
    expect(normaliseDescription(`alpha${punctuation} \t omega`)).toBe("alpha omega");
  });

  it("2. keeps the typographic apostrophe, CJK and emoji inside tokens", () => {
    expect(normaliseDescription("user\u2019s")).toBe("user\u2019"); // one token; Porter drops the s
    expect(normaliseDescription("user's")).toBe("user"); // two tokens; "s" is too short
    expect(normaliseDescription("検索ツール")).toBe("検索ツール");
    expect(normaliseDescription("rocket🚀launch")).toBe("rocket🚀launch");
  });

  it("3. drops tokens under 2 code points (an emoji is one code point, two UTF-16 units)", () => {
    expect(normaliseDescription("a b z 🚀 é ab")).toBe("ab");
    expect(normaliseDescription("🚀🚀")).toBe("🚀🚀");
  });

  it("3./5. drops stopwords before and after stemming; list, get, search, just, now stay", () => {
    expect(normaliseDescription("the using via shall")).toBe("");
    expect(normaliseDescription("wills overs")).toBe(""); // stems "will" and "over" are stopwords
    expect(normaliseDescription("list get search just now")).toBe("get just list now search");
    expect(DESCRIPTION_STOPWORDS.size).toBe(153); // the SPEC §1.3 list, counted
    for (const word of ["list", "get", "search", "just", "now"]) expect(DESCRIPTION_STOPWORDS.has(word)).toBe(false);
  });

  it("4. stems with Porter (1980): abli → able, no logi → log", () => {
    expect(normaliseDescription("technology")).toBe("technologi");
    expect(normaliseDescription("possibly")).toBe("possibli");
    expect(normaliseDescription("reasonably")).toBe("reason");
  });

  it("4. leaves tokens under 4 code points unstemmed, stems 4 and up", () => {
    expect(normaliseDescription("yes bus gas")).toBe("bus gas yes");
    expect(normaliseDescription("runs")).toBe("run");
    // 3 code points, 4 UTF-16 units: still unstemmed.
    expect(normaliseDescription("🚀es")).toBe("🚀es");
    expect(normaliseDescription("🚀ies")).toBe("🚀i");
  });

  it("6. sorts by code point, not UTF-16 unit, and keeps duplicates", () => {
    expect(normaliseDescription("🚀ab \uFFFDab \uE000ab zz")).toBe("zz \uE000ab \uFFFDab 🚀ab");
    expect(["🚀ab", "\uFFFDab"].sort()).toEqual(["🚀ab", "\uFFFDab"]); // what UTF-16 order would give
    expect(normaliseDescription("search searching searched")).toBe("search search search");
  });

  it("treats a missing description as the empty text", () => {
    expect(descriptionHash(undefined)).toBe("e3b0c44298fc");
    expect(descriptionHash(null)).toBe("e3b0c44298fc");
    expect(descriptionNorm(undefined)).toBe("e3b0c44298fc");
    expect(descriptionHash("Search")).toBe(nodeHex12("Search"));
  });
});

describe("compareByCodePoint", () => {
  const byCodePoint = (a: string, b: string) => {
    const x = Array.from(a, (c) => c.codePointAt(0)!);
    const y = Array.from(b, (c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return Math.sign(x.length - y.length);
  };

  it("agrees with a code point array comparison, lone surrogates included", () => {
    const alphabet = ["a", "z", "\uE000", "\uFFFD", "🚀", "😀", "\ud800", "\udc00", "\ud83d"];
    const strings: string[] = [""];
    for (const x of alphabet) {
      strings.push(x);
      for (const y of alphabet) strings.push(x + y);
    }
    for (const a of strings) for (const b of strings) expect(Math.sign(compareByCodePoint(a, b))).toBe(byCodePoint(a, b));
  });
});
