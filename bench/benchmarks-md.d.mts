/** Replaces benchmark `name`'s own section of docs/benchmarks.md with `markdown` (see benchmarks-md.mjs). */
export function writeBenchmarkSection(name: string, markdown: string): void;
