// `npm run bench:wire`: the wire contract's hot paths (SPEC §1.3, §1.1), each beside a baseline
// measured in the same run, written to the bench:wire section of docs/benchmarks.md.
//   - argsHash of a ~1 KB argument object (target ≤ 10 µs)
//   - canonicalize vs the `canonicalize` npm package on ~80 B, 1 KB and 64 KB inputs
//   - JSON.parse + parseBatch of a 500-call envelope (target ≤ 1.5 ms), Zod JIT and jitless
import { sha256 } from "@noble/hashes/sha2.js";
import canonicalizePackage from "canonicalize";
import { spawnSync } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { argsHash, canonicalize, sha256Hex12 } from "../src/shared/index.ts";
import { oneKilobyteArguments, sixtyFourKilobyteArguments, smallArguments } from "./wire/inputs.ts";
import { type Measurement, measure } from "./wire/measure.ts";
import { measureParseBatch, type ParseBatchMeasurements } from "./wire/parse-batch.ts";

const ARGS_HASH_TARGET_US = 10;
const PARSE_BATCH_TARGET_US = 1500;

const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(2)} µs`);
const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

// --- argsHash of ~1 KB ------------------------------------------------------------------------
const oneKbText = canonicalize(oneKilobyteArguments);
const oneKbBytes = new TextEncoder().encode(oneKbText);
const argsHashRows: Measurement[] = [
  measure("argsHash (canonicalize + SHA-256 + hex12)", () => argsHash(oneKilobyteArguments)),
  measure("part: canonicalize alone", () => canonicalize(oneKilobyteArguments)),
  measure("baseline: JSON.stringify alone", () => JSON.stringify(oneKilobyteArguments)),
  measure("baseline: SHA-256 of the same text (ours, hex12)", () => sha256Hex12(oneKbText)),
  measure("baseline: SHA-256 of the same bytes (@noble/hashes)", () => sha256(oneKbBytes)),
  measure("baseline: JSON.stringify + @noble/hashes SHA-256", () => sha256(new TextEncoder().encode(JSON.stringify(oneKilobyteArguments)))),
];

// --- canonicalize vs the package ----------------------------------------------------------------
const canonicalInputs = [
  ["small", smallArguments],
  ["1 KB", oneKilobyteArguments],
  ["64 KB", sixtyFourKilobyteArguments],
] as const;
const canonicalRows = canonicalInputs.map(([label, input]) => {
  if (canonicalize(input) !== canonicalizePackage(input)) throw new Error(`${label}: outputs differ`);
  return {
    label,
    bytes: utf8Bytes(canonicalize(input)),
    ours: measure("canonicalize", () => canonicalize(input)),
    pkg: measure("canonicalize package", () => canonicalizePackage(input)),
    stringify: measure("JSON.stringify", () => JSON.stringify(input)),
  };
});

// --- parseBatch -------------------------------------------------------------------------------
const jit = await measureParseBatch();
const child = spawnSync(
  process.execPath,
  ["--experimental-strip-types", "--no-warnings", fileURLToPath(new URL("./wire/parse-batch.ts", import.meta.url)), "--jitless"],
  { encoding: "utf8" },
);
if (child.status !== 0) throw new Error(`jitless run failed: ${child.stderr}`);
const jitless = JSON.parse(child.stdout) as ParseBatchMeasurements;

// --- report -----------------------------------------------------------------------------------
const argsHashUs = argsHashRows[0]!.medianUs;
const parseJitUs = jit.parseBatch.medianUs;
const parseJitlessUs = jitless.parseBatch.medianUs;
const verdict = (us: number, target: number) => (us <= target ? `meets ≤ ${fmt(target)}` : `MISSES ≤ ${fmt(target)}`);

const lines: string[] = [];
lines.push(`Run on ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpus()[0]?.model ?? "unknown CPU"} (${cpus().length} cores, shared).`);
lines.push("Medians of per-call CPU time (process.cpuUsage) over 21–31 batches of ~10 ms each, after ~300 ms");
lines.push("of warm-up so the JIT has settled (without it runs came out up to 2× apart), so time");
lines.push("spent descheduled on the shared machine is not counted. Lower is better. Each input is");
lines.push("hashed repeatedly, so canonicalize's cache of quoted keys is warm, as it is for a tool whose");
lines.push("calls repeat their argument keys.");
lines.push("");
lines.push(`### argsHash of a ${oneKbBytes.length}-byte argument object — ${verdict(argsHashUs, ARGS_HASH_TARGET_US)}`);
lines.push("");
lines.push("| operation | median |");
lines.push("|---|---:|");
for (const row of argsHashRows) lines.push(`| ${row.name} | ${fmt(row.medianUs)} |`);
lines.push("");
lines.push("### canonicalize: ours vs the `canonicalize` npm package (same output checked first)");
lines.push("");
lines.push("| input | canonical bytes | ours | `canonicalize` package | ours ÷ package | JSON.stringify (floor, unsorted) |");
lines.push("|---|---:|---:|---:|---:|---:|");
for (const row of canonicalRows) {
  lines.push(
    `| ${row.label} | ${row.bytes} | ${fmt(row.ours.medianUs)} | ${fmt(row.pkg.medianUs)} | ${(row.ours.medianUs / row.pkg.medianUs).toFixed(2)} | ${fmt(row.stringify.medianUs)} |`,
  );
}
lines.push("");
lines.push(`### JSON.parse + parseBatch of a 500-call envelope (${jit.kept} kept) — ${verdict(Math.max(parseJitUs, parseJitlessUs), PARSE_BATCH_TARGET_US)}`);
lines.push("");
lines.push("parseBatch validates calls with `parseCallFast` (a hand-written twin of the Zod call schema,");
lines.push("differential-tested against it) and falls back to the schema for anything else; the last column is");
lines.push("the same envelope through the Zod schema alone.");
lines.push("");
lines.push("| Zod mode | JSON.parse alone (baseline) | JSON.parse + parseBatch | parseBatch per item | JSON.parse + Zod call schema per item |");
lines.push("|---|---:|---:|---:|---:|");
for (const [label, m] of [
  ["JIT (Node default)", jit],
  ["jitless (what workerd runs: no `new Function`)", jitless],
] as const) {
  lines.push(
    `| ${label} | ${fmt(m.jsonParse.medianUs)} | ${fmt(m.parseBatch.medianUs)} | ${fmt((m.parseBatch.medianUs - m.jsonParse.medianUs) / 500)} | ${fmt(m.schemaOnly.medianUs)} |`,
  );
}
const section = lines.join("\n");
console.log(section);

writeBenchmarkSection("wire", `## Wire contract (\`npm run bench:wire\`)\n\n${section}`);
