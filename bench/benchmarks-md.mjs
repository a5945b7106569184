// docs/benchmarks.md holds one section per benchmark, each between its own markers, so every
// `npm run bench:…` script rewrites only its own figures.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const BENCHMARKS_MD = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "benchmarks.md");

/**
 * Replaces the section of benchmark `name` (between `<!-- bench:NAME:start -->` and its end marker)
 * with `markdown`, appending it when absent and creating the file when needed.
 * @param {string} name
 * @param {string} markdown
 */
export function writeBenchmarkSection(name, markdown) {
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const current = existsSync(BENCHMARKS_MD)
    ? readFileSync(BENCHMARKS_MD, "utf8")
    : "# Benchmarks\n\nEach section is written by its `npm run bench:…` script.\n";
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  const next =
    from >= 0 && to > from ? current.slice(0, from) + block + current.slice(to + end.length) : `${current.trimEnd()}\n\n${block}\n`;
  mkdirSync(dirname(BENCHMARKS_MD), { recursive: true });
  writeFileSync(BENCHMARKS_MD, next);
  console.log(`Wrote the bench:${name} section of docs/benchmarks.md`);
}
