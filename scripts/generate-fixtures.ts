// Generates the wire-contract fixtures under test/fixtures from the algorithm itself (SPEC §1.3:
// "compute every fixture hash from the algorithm; never type one in"):
//   canonical.json    RFC 8785 cases: input, canonical string, args_hash
//   descriptions.json description normalisation cases: text, normalised string, both hashes
//   porter-words.txt  the word list the stemmer is differential-tested on (with --words)
// Every canonical string is cross-checked against the `canonicalize` npm package and every hash
// against node:crypto before anything is written.
//
//   npx node --experimental-strip-types scripts/generate-fixtures.ts [--words]
import canonicalizePackage from "canonicalize";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  argsHash,
  canonicalize,
  descriptionHash,
  descriptionNorm,
  normaliseDescription,
} from "../src/shared/index.ts";

const fixturesDir = new URL("../test/fixtures/", import.meta.url);

function nodeSha256Hex12(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 12);
}

function fail(message: string): never {
  throw new Error(message);
}

// ---------------------------------------------------------------------------------------------
// canonical.json
// ---------------------------------------------------------------------------------------------

/**
 * `json` is the input as JSON text. It is written to the fixture as `input` (a JSON value) when
 * re-serialising the parsed value reproduces the text, and as `input_json` (the text) when a
 * JSON writer would lose what the case is about (-0, 1.0, 1E30, 4.50, escapes such as \u0042).
 */
const canonicalCases: { name: string; why: string; json: string }[] = [
  { name: "empty object", why: "what absent arguments hash as", json: "{}" },
  { name: "empty array", why: "empty containers are written as they are", json: "[]" },
  { name: "empty containers nested", why: "empty containers inside others", json: '{"b":[],"a":{}}' },
  { name: "the empty key", why: "the empty string sorts before every other key", json: '{"a":1,"":0}' },
  {
    name: "UTF-16 key order above the BMP",
    why: "U+1F680 is D83D DE80 in UTF-16 and sorts before U+FFFD; code point or UTF-8 byte order puts it after",
    json: '{"\uFFFD":"replacement","\u{1F680}":"rocket","z":"ascii"}',
  },
  {
    name: "keys by UTF-16 code unit",
    why: "digits before uppercase before lowercase; '10' before '2'; no locale or numeric order",
    json: '{"b":1,"B":2,"a":3,"10":4,"2":5,"é":6,"_":7}',
  },
  {
    name: "non-ASCII unescaped",
    why: "Python's ensure_ascii and PHP's json_encode escape it",
    json: '{"city":"Zürich","word":"café","cjk":"東京","emoji":"\u{1F680}"}',
  },
  {
    name: "HTML characters unescaped",
    why: "Go and .NET escape < > &, PHP escapes /",
    json: '{"html":"<a href=\\"/docs?a=1&b=2\\">x</a>"}',
  },
  {
    name: "short escapes",
    why: "\\b \\t \\n \\f \\r \\\" \\\\ have two-character forms",
    json: '{"s":"\\b\\t\\n\\f\\r\\"\\\\"}',
  },
  {
    name: "other controls as lowercase \\u00xx",
    why: "U+0000-U+001F without a short escape are \\u00xx in lowercase hex; U+007F is not escaped",
    json: '{"s":"\\u0000\\u0001\\u000b\\u000e\\u001F\\u007f"}',
  },
  { name: "1e21", why: "ECMAScript switches to exponent form at 1e21 (Rust writes it out)", json: "[1e21]" },
  { name: "1e-7", why: "exponent form below 1e-6, with no zero padding (Go writes 1e-07)", json: "[1e-7]" },
  { name: "0.000001", why: "1e-6 is still written in full", json: "[0.000001]" },
  { name: "negative zero", why: "-0 is written 0", json: "[-0]" },
  { name: "smallest subnormal", why: "5e-324 round-trips as the shortest form", json: "[5e-324]" },
  { name: "largest double", why: "1.7976931348623157e+308", json: "[1.7976931348623157e308]" },
  {
    name: "integral floats",
    why: "1.0 is 1 (Python, Java, Ruby write 1.0), 1E2 is 100, 1e20 is written in full",
    json: "[1.0,100.00,1E2,1e20,-5.0]",
  },
  {
    name: "shortest round-trip numbers",
    why: "ECMAScript Number::toString: 0.1+0.2, a 17-digit value, a negative exponent",
    json: "[0.30000000000000004,123456789012345680000,-1.5e-10,0.1]",
  },
  {
    name: "integers beyond 2^53 are doubles",
    why: "RFC 8785 reads every number as an IEEE double: 9007199254740993 is 9007199254740992 (Python's json module keeps it as an exact int)",
    json: "[9007199254740993,18446744073709551615]",
  },
  { name: "booleans are not numbers", why: "Swift's NSNumber can turn true into 1", json: '{"flag":true,"count":1,"off":false}' },
  { name: "null arguments", why: "null is a value, not absent arguments", json: "null" },
  {
    name: "nested sorting",
    why: "keys are sorted at every depth, inside arrays too",
    json: '{"z":{"y":{"b":2,"a":1},"x":[{"d":4,"c":3}]},"a":0}',
  },
  {
    name: "arrays kept in order",
    why: "[1,2] and [2,1] are different calls",
    json: '{"ids":[3,1,2],"names":["b","a"]}',
  },
  {
    name: "lone surrogate",
    why: "JSON.stringify writes a lone surrogate as its lowercase \\udxxx escape, so every JavaScript string hashes",
    json: '{"s":"\\uD800x\\udfff"}',
  },
  {
    name: "RFC 8785 appendix example",
    why: "the RFC's own sample: numbers, escapes and literals together",
    json: '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  },
  {
    name: "a realistic call",
    why: "SPEC §1.3: the full input behind 52a4fe5fc814",
    json: '{"query":"quarterly revenue","limit":25,"filters":{"region":"EMEA","active":true}}',
  },
  {
    name: "a realistic call, keys reordered",
    why: "Ruby's JSON.generate keeps insertion order; the hash must not change",
    json: '{"filters":{"active":true,"region":"EMEA"},"limit":25,"query":"quarterly revenue"}',
  },
  { name: "a bare string", why: "arguments need not be an object", json: '"hello"' },
];

type CanonicalFixture = {
  name: string;
  why: string;
  input?: unknown;
  input_json?: string;
  canonical: string;
  args_hash: string;
};

function buildCanonicalFixtures(): CanonicalFixture[] {
  const fixtures: CanonicalFixture[] = [
    {
      name: "absent arguments",
      why: "a tool called without arguments hashes as {} (input_absent: no input at all)",
      input_absent: true,
      canonical: "{}",
      args_hash: argsHash(undefined),
    } as CanonicalFixture,
  ];
  const names = new Set<string>();
  for (const { name, why, json } of canonicalCases) {
    if (names.has(name)) fail(`duplicate case ${name}`);
    names.add(name);
    const value: unknown = JSON.parse(json);
    const canonical = canonicalize(value);
    const hash = argsHash(value);
    // Independent checks: the npm package (it refuses lone surrogates) and node:crypto.
    if (!name.startsWith("lone surrogate") && canonicalizePackage(value) !== canonical) {
      fail(`${name}: canonicalize package disagrees`);
    }
    if (nodeSha256Hex12(canonical) !== hash) fail(`${name}: node:crypto disagrees`);
    const lossless = JSON.stringify(value) === json;
    fixtures.push(
      lossless
        ? { name, why, input: value, canonical, args_hash: hash }
        : { name, why, input_json: json, canonical, args_hash: hash },
    );
  }
  if (nodeSha256Hex12("{}") !== fixtures[0]!.args_hash) fail("absent: node:crypto disagrees");
  return fixtures;
}

// ---------------------------------------------------------------------------------------------
// descriptions.json
// ---------------------------------------------------------------------------------------------

const PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

const descriptionCases: { name: string; why: string; text: string }[] = [
  { name: "SPEC example: mailbox", why: "SPEC §1.3", text: "Search for threads in the user's mailbox" },
  { name: "SPEC example: punctuation", why: "SPEC §1.3", text: "read-only; write_once. get/set (maybe)" },
  { name: "empty", why: "the empty description normalises to the empty string", text: "" },
  { name: "only separators", why: "nothing but whitespace and punctuation", text: " \t--!!?? ...\r\n" },
  { name: "only stopwords", why: "every token is a stopword", text: "The, and; of: WHICH would" },
  {
    name: "ASCII-only lowercasing",
    why: "step 1 lowercases A-Z only: É, Ş, İ, ẞ keep their case; the ASCII around them is lowercased",
    text: "ÉCOLE École STRAẞE ŞEHİR Zoë RÉSUMÉ",
  },
  {
    name: "every ASCII whitespace splits",
    why: "space, \\t, \\n, \\v, \\f, \\r",
    text: "alpha beta\tgamma\ndelta\u000bepsilon\fzeta\rtheta",
  },
  {
    name: "all 32 ASCII punctuation characters split",
    why: "step 2: each one separates tokens",
    text: Array.from(PUNCTUATION, (ch, i) => `t${String.fromCharCode(97 + (i % 26))}${i}${ch}`).join(""),
  },
  {
    name: "non-ASCII separators do not split",
    why: "NBSP, em dash, ideographic space, typographic apostrophe, ellipsis are parts of tokens",
    text: "user\u2019s non\u00a0breaking em\u2014dash wide\u3000space wait\u2026",
  },
  {
    name: "typographic apostrophe kept in the token",
    why: "user’s is one token (stemmed: the final s goes, the apostrophe stays), user's is two",
    text: "user\u2019s user's",
  },
  { name: "CJK and emoji", why: "letters of any script and emoji are token characters", text: "検索 ツール 🚀rocket 東京タワー 👍" },
  { name: "short tokens", why: "step 3 drops tokens under 2 code points; 2-3 stay unstemmed", text: "a b c x y z ab cd e1 42" },
  { name: "stopwords before stemming", why: "dropped as tokens", text: "using uses used via without shall orders" },
  {
    name: "stopwords after stemming",
    why: "step 5: wills → will, overs → over, abouts → about are dropped as stems",
    text: "wills overs abouts musts offs listing",
  },
  {
    name: "abli family (1980)",
    why: "step 2 ABLI → ABLE only; the revision's BLI → BLE would give possibl/visibl",
    text: "possibly visibly humbly reasonably capably",
  },
  {
    name: "logi family (1980)",
    why: "no LOGI → LOG in 1980: technologi, not technolog",
    text: "technology biology analogy methodologies",
  },
  {
    name: "under 4 code points unstemmed",
    why: "yes, bus, gas, ies would lose their s; 4-letter runs is stemmed",
    text: "yes bus gas ies runs sees",
  },
  {
    name: "code point order, not UTF-16",
    why: "U+E000 < U+FFFD < U+1F680 by code point; UTF-16 order puts the emoji (D83D) first",
    text: "\u{1F680}ab \uFFFDab \uE000ab zz",
  },
  { name: "duplicates kept", why: "step 6 keeps repeated stems", text: "search searching searched searches" },
  { name: "mixed case", why: "SEARCH and Search are the same token", text: "SEARCH Orders by CUSTOMER id" },
  { name: "digits and mixed tokens", why: "digits are token characters; Porter treats them as consonants", text: "v2 2024 utf8 ipv6 sha256 base64url" },
  {
    name: "markdown and code",
    why: "a realistic description with code and a URL",
    text: "Use `list_orders(limit=10)` to get **orders**; see https://example.com/docs#pagination.",
  },
  {
    name: "y rules",
    why: "y is a vowel after a consonant; step 1c turns a final y into i",
    text: "happy yesterday playing sky toys yielding",
  },
  {
    name: "non-ASCII inside stemmed tokens",
    why: "Porter's suffix rules still apply; non-ASCII code points count as consonants",
    text: "cafés naïvely résumés",
  },
  {
    name: "a realistic tool description",
    why: "end to end",
    text:
      "Retrieves the customer's most recent orders, optionally filtered by status. " +
      "Returns up to 50 orders sorted by creation date; use the cursor for pagination.",
  },
];

function buildDescriptionFixtures() {
  return descriptionCases.map(({ name, why, text }) => {
    const normalised = normaliseDescription(text);
    const norm = descriptionNorm(text);
    if (nodeSha256Hex12(normalised) !== norm) fail(`${name}: node:crypto disagrees on the norm`);
    if (nodeSha256Hex12(text) !== descriptionHash(text)) fail(`${name}: node:crypto disagrees on the hash`);
    return { name, why, text, normalised, description_norm: norm, description_hash: descriptionHash(text) };
  });
}

// ---------------------------------------------------------------------------------------------
// porter-words.txt: lowercase words of 3+ letters from the English documentation in node_modules
// ---------------------------------------------------------------------------------------------

function buildWordList(): string {
  const words = new Set<string>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      const stat = statSync(path);
      if (stat.isDirectory()) visit(path);
      else if (/\.(md|markdown|txt)$/i.test(entry) || entry.endsWith(".d.ts")) {
        for (const match of readFileSync(path, "utf8").matchAll(/\b[a-z]{3,}\b/g)) words.add(match[0]);
      }
    }
  };
  visit(new URL("../node_modules", import.meta.url).pathname);
  return [...words].sort().join("\n") + "\n";
}

const canonicalFile = {
  about:
    "MCPulse args_hash conformance cases (SPEC §1.3): canonical = RFC 8785 form of the input, " +
    "args_hash = first 12 hex of SHA-256 of its UTF-8 bytes. The input is `input` (a JSON value), " +
    "or `input_json` (JSON text to parse) where a JSON writer would lose what the case tests " +
    "(-0, 1.0, exponent spellings, \\u escapes), or absent (`input_absent`: no arguments at all). " +
    "Generated by scripts/generate-fixtures.ts; never edit by hand.",
  cases: buildCanonicalFixtures(),
};
const descriptionFile = {
  about:
    "MCPulse description normalisation cases (SPEC §1.3): normalised = the token string, " +
    "description_norm = hex12 SHA-256 of it, description_hash = hex12 SHA-256 of the exact text. " +
    "Generated by scripts/generate-fixtures.ts; never edit by hand.",
  cases: buildDescriptionFixtures(),
};

writeFileSync(new URL("canonical.json", fixturesDir), JSON.stringify(canonicalFile, null, 2) + "\n");
writeFileSync(new URL("descriptions.json", fixturesDir), JSON.stringify(descriptionFile, null, 2) + "\n");
console.log(`canonical.json: ${canonicalFile.cases.length} cases`);
console.log(`descriptions.json: ${descriptionFile.cases.length} cases`);
if (process.argv.includes("--words")) {
  const list = buildWordList();
  writeFileSync(new URL("porter-words.txt", fixturesDir), list);
  console.log(`porter-words.txt: ${list.split("\n").length - 1} words`);
}
