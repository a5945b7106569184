// The ORIGINAL Porter (1980) stemmer, which SPEC §1.3 requires: step 2 maps ABLI → ABLE (the later
// revision every npm package implements has BLI → BLE) and has no LOGI → LOG rule. Works on code
// points; only lowercase ASCII suffixes ever change.

const VOWELS = new Set(["a", "e", "i", "o", "u"]);

class Word {
  /** The word's code points; `end` is one past the last one still in the word. */
  readonly chars: string[];
  end: number;
  /** Where the stem before the last matched suffix ends (Porter's `j`, exclusive). */
  stemEnd = 0;

  constructor(word: string) {
    this.chars = Array.from(word);
    this.end = this.chars.length;
  }

  isConsonant(i: number): boolean {
    const ch = this.chars[i]!;
    if (VOWELS.has(ch)) return false;
    if (ch === "y") return i === 0 ? true : !this.isConsonant(i - 1);
    return true;
  }

  /** Porter's m: the number of VC sequences in chars[0, upTo). */
  measure(upTo: number): number {
    let i = 0;
    while (i < upTo && this.isConsonant(i)) i++;
    let m = 0;
    while (i < upTo) {
      while (i < upTo && !this.isConsonant(i)) i++;
      if (i >= upTo) break;
      m++;
      while (i < upTo && this.isConsonant(i)) i++;
    }
    return m;
  }

  /** *v*: chars[0, upTo) contains a vowel. */
  hasVowel(upTo: number): boolean {
    for (let i = 0; i < upTo; i++) if (!this.isConsonant(i)) return true;
    return false;
  }

  /** *d: chars[at-1] and chars[at] are the same consonant. */
  endsDoubleConsonant(at: number): boolean {
    return at >= 1 && this.chars[at] === this.chars[at - 1] && this.isConsonant(at);
  }

  /** *o: chars[at-2..at] is consonant-vowel-consonant and the last is not w, x or y. */
  endsCvc(at: number): boolean {
    if (at < 2 || !this.isConsonant(at) || this.isConsonant(at - 1) || !this.isConsonant(at - 2)) {
      return false;
    }
    const ch = this.chars[at]!;
    return ch !== "w" && ch !== "x" && ch !== "y";
  }

  /** Whether the word ends with `suffix`; on a match, stemEnd marks where the suffix starts. */
  endsWith(suffix: string): boolean {
    const length = suffix.length; // suffixes are ASCII: code units = code points
    if (length > this.end) return false;
    for (let i = 0; i < length; i++) {
      if (this.chars[this.end - length + i] !== suffix[i]) return false;
    }
    this.stemEnd = this.end - length;
    return true;
  }

  /** Replaces the matched suffix (from stemEnd) with `replacement`. */
  replaceSuffix(replacement: string): void {
    this.chars.length = this.stemEnd;
    for (const ch of replacement) this.chars.push(ch);
    this.end = this.chars.length;
  }

  /** Replaces the matched suffix when the stem's measure is > 0 — the (m>0) rules of steps 2, 3. */
  replaceIfMeasured(replacement: string): void {
    if (this.measure(this.stemEnd) > 0) this.replaceSuffix(replacement);
  }

  toString(): string {
    return this.chars.slice(0, this.end).join("");
  }
}

/**
 * Rule lists of steps 2, 3 and 4, in the published order. Within a step the longest matching
 * suffix is taken (listed longest first where two can both match), and if its condition fails no
 * other rule of that step applies.
 */
const STEP2_RULES: ReadonlyArray<readonly [string, string]> = [
  ["ational", "ate"],
  ["tional", "tion"],
  ["enci", "ence"],
  ["anci", "ance"],
  ["izer", "ize"],
  ["abli", "able"], // the 1980 rule; the revision's "bli" → "ble" is not used (SPEC §1.3)
  ["alli", "al"],
  ["entli", "ent"],
  ["eli", "e"],
  ["ousli", "ous"],
  ["ization", "ize"],
  ["ation", "ate"],
  ["ator", "ate"],
  ["alism", "al"],
  ["iveness", "ive"],
  ["fulness", "ful"],
  ["ousness", "ous"],
  ["aliti", "al"],
  ["iviti", "ive"],
  ["biliti", "ble"],
  // no "logi" → "log": added only in the revision (SPEC §1.3)
];

const STEP3_RULES: ReadonlyArray<readonly [string, string]> = [
  ["icate", "ic"],
  ["ative", ""],
  ["alize", "al"],
  ["iciti", "ic"],
  ["ical", "ic"],
  ["ful", ""],
  ["ness", ""],
];

const STEP4_SUFFIXES = [
  "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
  "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
] as const;

/** The longest rule of `rules` whose suffix ends the word (sets stemEnd), or undefined. */
function longestMatch<T extends readonly [string, string]>(word: Word, rules: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const rule of rules) {
    if ((best === undefined || rule[0].length > best[0].length) && word.endsWith(rule[0])) best = rule;
  }
  if (best !== undefined) word.endsWith(best[0]); // restore stemEnd for the winner
  return best;
}

function step1a(word: Word): void {
  if (word.endsWith("sses")) word.replaceSuffix("ss");
  else if (word.endsWith("ies")) word.replaceSuffix("i");
  else if (word.endsWith("ss")) return;
  else if (word.endsWith("s")) word.replaceSuffix("");
}

function step1b(word: Word): void {
  if (word.endsWith("eed")) {
    if (word.measure(word.stemEnd) > 0) word.replaceSuffix("ee");
    return;
  }
  if (!((word.endsWith("ed") || word.endsWith("ing")) && word.hasVowel(word.stemEnd))) return;
  word.replaceSuffix("");
  // The tidy-up after removing -ed/-ing.
  if (word.endsWith("at")) word.replaceSuffix("ate");
  else if (word.endsWith("bl")) word.replaceSuffix("ble");
  else if (word.endsWith("iz")) word.replaceSuffix("ize");
  else if (word.endsDoubleConsonant(word.end - 1)) {
    const last = word.chars[word.end - 1];
    if (last !== "l" && last !== "s" && last !== "z") {
      word.chars.length = word.end - 1;
      word.end -= 1;
    }
  } else if (word.measure(word.end) === 1 && word.endsCvc(word.end - 1)) {
    word.stemEnd = word.end;
    word.replaceSuffix("e");
  }
}

function step1c(word: Word): void {
  if (word.endsWith("y") && word.hasVowel(word.stemEnd)) word.replaceSuffix("i");
}

/**
 * Step 2 of the later revision (Porter's own C and JavaScript code, and the npm packages): BLI →
 * BLE instead of ABLI → ABLE, plus LOGI → LOG. Kept only so the tests can show that this
 * implementation and the `stemmer` package differ in exactly those two rules and nothing else.
 */
const REVISED_STEP2_RULES: ReadonlyArray<readonly [string, string]> = [
  ...STEP2_RULES.filter(([suffix]) => suffix !== "abli"),
  ["bli", "ble"],
  ["logi", "log"],
];

/** "1980" is the published algorithm SPEC §1.3 requires; "revised" exists for differential tests. */
export type PorterVariant = "1980" | "revised";

function step2(word: Word, rules: ReadonlyArray<readonly [string, string]>): void {
  const rule = longestMatch(word, rules);
  if (rule !== undefined) word.replaceIfMeasured(rule[1]);
}

function step3(word: Word): void {
  const rule = longestMatch(word, STEP3_RULES);
  if (rule !== undefined) word.replaceIfMeasured(rule[1]);
}

function step4(word: Word): void {
  let best: string | undefined;
  for (const suffix of STEP4_SUFFIXES) {
    if ((best === undefined || suffix.length > best.length) && word.endsWith(suffix)) best = suffix;
  }
  if (best === undefined) return;
  word.endsWith(best);
  if (word.measure(word.stemEnd) <= 1) return;
  if (best === "ion") {
    // (m>1 and (*S or *T)) ION →
    const before = word.chars[word.stemEnd - 1];
    if (before !== "s" && before !== "t") return;
  }
  word.replaceSuffix("");
}

function step5(word: Word): void {
  // 5a: (m>1) E → ; (m=1 and not *o) E →
  if (word.endsWith("e")) {
    const m = word.measure(word.stemEnd);
    if (m > 1 || (m === 1 && !word.endsCvc(word.stemEnd - 1))) word.replaceSuffix("");
  }
  // 5b: (m>1 and *d and *L) → single letter
  if (word.end >= 2 && word.chars[word.end - 1] === "l" && word.endsDoubleConsonant(word.end - 1)) {
    if (word.measure(word.end) > 1) {
      word.chars.length = word.end - 1;
      word.end -= 1;
    }
  }
}

/**
 * The Porter (1980) stem of a lowercase word. As published, short words are stemmed too ("is" →
 * "i"; Porter's later C code leaves words of two letters alone); description normalisation only
 * stems tokens of 4 code points or more (SPEC §1.3), where the two agree.
 */
export function porterStem(word: string, variant: PorterVariant = "1980"): string {
  const w = new Word(word);
  step1a(w);
  step1b(w);
  step1c(w);
  step2(w, variant === "1980" ? STEP2_RULES : REVISED_STEP2_RULES);
  step3(w);
  step4(w);
  step5(w);
  return w.toString();
}
