// Every `§` the code, tests and docs cite resolves to a section of docs/spec.md, the specification the
// repository carries: a citation of a section that does not exist (a typo, a renumbered section, a
// section not yet written down) fails here, with the file and line that cites it.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SPEC_PATH = "docs/spec.md";
/** Where citations live; node_modules, build output and the browser's screenshots are never read. */
const SCANNED = ["src", "test", "docs", "bench", "scripts", "examples", "migrations", "README.md", "schema.sql"];
const TEXT_FILE = /\.(ts|tsx|mts|mjs|js|md|sql)$/;
/** Sections of other documents cited with `§` (RFC 8785 §3.2.3, FIPS 180-4 §5.3.3, ECMA-262 §25.5.2.2). */
const OTHER_DOCUMENT = /(RFC \d+|FIPS [\d-]+|ECMA-\d+)\s*$/;

/** The section numbers docs/spec.md defines: its `## 1.` and `### 1.1` headings. */
function specSections(markdown: string): Set<string> {
  const sections = new Set<string>();
  for (const match of markdown.matchAll(/^#{2,4} (\d+(?:\.\d+)*)[. ]/gm)) sections.add(match[1] as string);
  return sections;
}

type Citation = { file: string; line: number; section: string; text: string };

/**
 * The spec sections a text cites: `SPEC §2.2`, `§2.2/§2.4`, `§2.1–2.3` (both ends), `(§4)`. A `§`
 * right after another document's name is that document's and is skipped.
 */
function citationsIn(file: string, text: string): Citation[] {
  const found: Citation[] = [];
  const lines = text.split("\n");
  lines.forEach((lineText, index) => {
    for (const match of lineText.matchAll(/§\s?(\d+(?:\.\d+)*)(?:\s?[–-]\s?(\d+(?:\.\d+)*))?/g)) {
      if (OTHER_DOCUMENT.test(lineText.slice(0, match.index))) continue;
      for (const section of [match[1], match[2]]) {
        if (section !== undefined) found.push({ file, line: index + 1, section, text: match[0] });
      }
    }
  });
  return found;
}

function filesUnder(path: string): string[] {
  const absolute = join(ROOT, path);
  if (!statSync(absolute, { throwIfNoEntry: false })) return [];
  if (statSync(absolute).isFile()) return [path];
  return readdirSync(absolute, { recursive: true, encoding: "utf8" })
    .filter((name) => TEXT_FILE.test(name) && !name.split(/[\\/]/).includes("node_modules"))
    .map((name) => join(path, name))
    .filter((name) => statSync(join(ROOT, name)).isFile());
}

function unresolved(citations: readonly Citation[], sections: ReadonlySet<string>): Citation[] {
  return citations.filter((c) => !sections.has(c.section));
}

describe("SPEC citations", () => {
  const sections = specSections(readFileSync(join(ROOT, SPEC_PATH), "utf8"));
  const citations = SCANNED.flatMap(filesUnder).flatMap((file) => citationsIn(relative(ROOT, join(ROOT, file)), readFileSync(join(ROOT, file), "utf8")));

  it("docs/spec.md has every part and subsection the code is written against", () => {
    for (const section of ["1", "1.1", "1.2", "1.3", "2", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3", "4", "5", "6", "7", "9"]) {
      expect(sections.has(section), `§${section}`).toBe(true);
    }
  });

  it("finds the citations (the scan itself works)", () => {
    // Hundreds of citations across the tree; a broken scan would pass vacuously.
    expect(citations.length).toBeGreaterThan(200);
    expect(citations.some((c) => c.file.startsWith("src/sdk/") && c.section === "4")).toBe(true);
    expect(citations.some((c) => c.file.startsWith("test/") && c.section === "2.2")).toBe(true);
  });

  it("every § cited in src/, test/, docs/, bench/, scripts/ and the README exists in docs/spec.md", () => {
    const missing = unresolved(citations, sections).map((c) => `${c.file}:${c.line} cites ${c.text}`);
    expect(missing).toEqual([]);
  });

  it("reads ranges, chains and other documents' sections the way they are meant", () => {
    const cited = (text: string) => citationsIn("x.ts", text).map((c) => c.section);
    expect(cited("as SPEC §2.2 says")).toEqual(["2.2"]);
    expect(cited("SPEC §2.1–2.3: counters")).toEqual(["2.1", "2.3"]);
    expect(cited("SPEC §2.2/§2.4.")).toEqual(["2.2", "2.4"]);
    expect(cited("SPEC §1.3's order")).toEqual(["1.3"]);
    expect(cited("RFC 8785 §3.2.3 and FIPS 180-4 §5.3.3 and ECMA-262 §25.5.2.2")).toEqual([]);
  });

  it("fails on a section the spec does not have", () => {
    // Spelled with the escape so that this file does not cite the missing sections itself.
    const found = citationsIn("src/x.ts", "// see SPEC \u00a72.9 and \u00a799, but \u00a72.2 exists");
    expect(unresolved(found, sections).map((c) => c.section)).toEqual(["2.9", "99"]);
  });
});
