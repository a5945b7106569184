// Description normalisation (SPEC §1.3): the token string whose hash, `description_norm`, lets
// tools with the same description be found however the text was punctuated or inflected.
import { codePointLength, sha256Hex12 } from "./hash.ts";
import { porterStem } from "./porter.ts";

/** The MCPulse stopwords, identical in every SDK (SPEC §1.3). */
export const DESCRIPTION_STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all am an and any are aren as at be because been before " +
    "being below between both but by can cannot could couldn did didn do does doesn doing don down " +
    "during each few for from further had hadn has hasn have haven having he her here hers herself " +
    "him himself his how i if in into is isn it its itself let me more most mustn my myself no nor " +
    "not of off on once only or other ought our ours ourselves out over own same shan she should " +
    "shouldn so some such than that the their theirs them themselves then there these they this " +
    "those through to too under until up very was wasn we were weren what when where which while " +
    "who whom why with won would wouldn you your yours yourself yourselves use used uses using via " +
    "without will may might must shall"
  ).split(" "),
);

/** Tokens shorter than this many code points are dropped (step 3). */
export const MIN_TOKEN_CODE_POINTS = 2;
/** Tokens shorter than this many code points are kept unstemmed (step 4). */
export const MIN_STEMMED_CODE_POINTS = 4;

// Step 2: runs of ASCII whitespace (space \t \n \v \f \r) and the 32 ASCII punctuation characters.
// Nothing else splits: non-ASCII letters, CJK, emoji, U+00A0 and the typographic apostrophe stay
// inside tokens.
const TOKEN_SEPARATORS = /[ \t\n\v\f\r!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]+/;
const ASCII_UPPERCASE = /[A-Z]+/g;

/** The normalised description, SPEC §1.3's recipe step by step; duplicates stay. */
export function normaliseDescription(text: string): string {
  const lowered = text.replace(ASCII_UPPERCASE, (letters) => letters.toLowerCase());
  const stems: string[] = [];
  for (const token of lowered.split(TOKEN_SEPARATORS)) {
    const codePoints = codePointLength(token);
    if (codePoints < MIN_TOKEN_CODE_POINTS || DESCRIPTION_STOPWORDS.has(token)) continue;
    const stem = codePoints < MIN_STEMMED_CODE_POINTS ? token : porterStem(token);
    if (DESCRIPTION_STOPWORDS.has(stem)) continue;
    stems.push(stem);
  }
  return stems.sort(compareByCodePoint).join(" ");
}

/** `description_norm` (SPEC §1.3): hex12 of the normalised description; none counts as "". */
export function descriptionNorm(text: string | null | undefined): string {
  return sha256Hex12(normaliseDescription(typeof text === "string" ? text : ""));
}

/**
 * Orders strings by Unicode code point, which differs from JavaScript's default UTF-16 order when
 * a character above U+FFFF meets one in U+E000–U+FFFF (🚀 U+1F680 sorts after U+FFFD here).
 */
export function compareByCodePoint(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
  }
  // One is a prefix of the other (by code points, since both advanced together).
  return a.length - i === b.length - i ? 0 : a.length - i < b.length - i ? -1 : 1;
}
