// The Porter (1980) stemmer (SPEC §1.3): the paper's own examples, and a differential test against
// the `stemmer` npm package (the later revision) on a large word list, where the two may differ
// only in step 2's ABLI/BLI and LOGI rules.
import { readFileSync } from "node:fs";
import { stemmer } from "stemmer";
import { describe, expect, it } from "vitest";
import { porterStem } from "../../src/shared/index.ts";

const words = readFileSync(new URL("../fixtures/porter-words.txt", import.meta.url), "utf8")
  .split("\n")
  .filter((word) => word.length > 0);

describe("porterStem (1980)", () => {
  // Examples printed in Porter's paper, step by step.
  it.each([
    ["caresses", "caress"], ["ponies", "poni"], ["ties", "ti"], ["caress", "caress"], ["cats", "cat"],
    ["feed", "feed"], ["agreed", "agre"], ["plastered", "plaster"], ["bled", "bled"], ["motoring", "motor"],
    ["sing", "sing"], ["conflated", "conflat"], ["troubled", "troubl"], ["sized", "size"], ["hopping", "hop"],
    ["tanned", "tan"], ["falling", "fall"], ["hissing", "hiss"], ["fizzed", "fizz"], ["failing", "fail"],
    ["filing", "file"], ["happy", "happi"], ["sky", "sky"], ["relational", "relat"], ["conditional", "condit"],
    ["rational", "ration"], ["valenci", "valenc"], ["hesitanci", "hesit"], ["digitizer", "digit"],
    ["conformabli", "conform"], ["radicalli", "radic"], ["differentli", "differ"], ["vileli", "vile"],
    ["analogousli", "analog"], ["vietnamization", "vietnam"], ["predication", "predic"], ["operator", "oper"],
    ["feudalism", "feudal"], ["decisiveness", "decis"], ["hopefulness", "hope"], ["callousness", "callous"],
    ["formaliti", "formal"], ["sensitiviti", "sensit"], ["sensibiliti", "sensibl"], ["triplicate", "triplic"],
    ["formative", "form"], ["formalize", "formal"], ["electriciti", "electr"], ["electrical", "electr"],
    ["hopeful", "hope"], ["goodness", "good"], ["revival", "reviv"], ["allowance", "allow"], ["inference", "infer"],
    ["airliner", "airlin"], ["gyroscopic", "gyroscop"], ["adjustable", "adjust"], ["defensible", "defens"],
    ["irritant", "irrit"], ["replacement", "replac"], ["adjustment", "adjust"], ["dependent", "depend"],
    ["adoption", "adopt"], ["homologou", "homolog"], ["communism", "commun"], ["activate", "activ"],
    ["angulariti", "angular"], ["homologous", "homolog"], ["effective", "effect"], ["bowdlerize", "bowdler"],
    ["probate", "probat"], ["rate", "rate"], ["cease", "ceas"], ["controll", "control"], ["roll", "roll"],
  ])("%s → %s", (word, stem) => {
    expect(porterStem(word)).toBe(stem);
  });

  it("keeps the 1980 forms SPEC §1.3 names", () => {
    expect(porterStem("technology")).toBe("technologi");
    expect(porterStem("technology", "revised")).toBe("technolog");
    expect(porterStem("possibly")).toBe("possibli");
    expect(porterStem("possibly", "revised")).toBe("possibl");
    expect(porterStem("reasonably")).toBe(porterStem("reasonably", "revised"));
  });

  it("stems short words as the paper does (the later C code leaves two-letter words alone)", () => {
    expect(porterStem("is")).toBe("i");
    expect(porterStem("as")).toBe("a");
    expect(porterStem("ss")).toBe("ss");
    expect(porterStem("s")).toBe("");
    expect(porterStem("")).toBe("");
    expect(porterStem("ies")).toBe("i");
  });

  it("treats code points, not UTF-16 units, as letters", () => {
    // 🚀 is one consonant: "x a 🚀" ends consonant-vowel-consonant, so *o holds and the e stays.
    expect(porterStem("xa🚀e")).toBe("xa🚀e");
    // Two equal emoji are a double consonant: -ing then loses one of them.
    expect(porterStem("ka😀😀ing")).toBe("ka😀");
  });
});

describe("conformance with NLTK's Porter 1980 (ORIGINAL_ALGORITHM mode)", () => {
  // test/fixtures/porter-1980-nltk.tsv was written by scripts/porter-reference-nltk.py from an
  // independent implementation of the 1980 paper; it holds every word of the list, short words,
  // non-ASCII letters and emoji included.
  const reference = readFileSync(new URL("../fixtures/porter-1980-nltk.tsv", import.meta.url), "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => line.split("\t") as [string, string]);

  it("agrees on every word", () => {
    expect(reference.length).toBeGreaterThan(12_000);
    const mismatches = reference.filter(([word, stem]) => porterStem(word) !== stem);
    expect(mismatches).toEqual([]);
  });
});

describe("differential test against the `stemmer` package", () => {
  // SPEC §1.3 stems only tokens of 4 code points or more; below that the package's regex port
  // deviates from Porter's own C code (it leaves "ies" as "ie"), which does not matter here.
  const stemmed = words.filter((word) => word.length >= 4);

  it("uses a large word list", () => {
    expect(stemmed.length).toBeGreaterThan(10_000);
  });

  it("the revised variant equals the package on every word", () => {
    const mismatches = stemmed.filter((word) => porterStem(word, "revised") !== stemmer(word));
    expect(mismatches).toEqual([]);
  });

  it("the 1980 algorithm differs from the package only in the ABLI/BLI and LOGI families", () => {
    const differences = stemmed.filter((word) => porterStem(word) !== stemmer(word));
    // Each difference is step 2's rule table: the revised variant (identical but for those two
    // rules) agrees with the package, and the 1980 stem keeps the -bli / -logi ending.
    for (const word of differences) {
      expect(porterStem(word, "revised")).toBe(stemmer(word));
      expect(porterStem(word)).toMatch(/(bli|logi)$/);
      expect(stemmer(word)).toMatch(/(bl|log)$/);
    }
    expect(differences).toContain("technology");
    expect(differences.length).toBeGreaterThan(0);
  });
});
