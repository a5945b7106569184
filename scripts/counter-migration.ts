// `npm run counter:migration -- <counter>`: writes migrations/NNNN_add_<counter>.sql for a counter
// already added to COUNTERS (src/worker/metrics/counters.ts): its column on the hour and day rows and
// the day triggers recreated with the whole list (docs/architecture.md, "Adding a counter").
import { readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { addCounterMigration } from "../src/worker/db/day-triggers.ts";
import { COUNTER_NAMES } from "../src/worker/metrics/counters.ts";

const counter = process.argv[2];
if (!counter) {
  console.error("usage: npm run counter:migration -- <counter>");
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const numbers = readdirSync(join(root, "migrations")).map((f) => Number(/^(\d{4})_/.exec(f)?.[1] ?? 0));
const next = String(Math.max(0, ...numbers) + 1).padStart(4, "0");
const file = join("migrations", `${next}_add_${counter}.sql`);
writeFileSync(join(root, file), addCounterMigration(counter, COUNTER_NAMES));
console.log(`${file} written; now run npm run schema`);
