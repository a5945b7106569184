// `npm run openapi:docs`: writes the reference parts of docs/read-api.md — the parameters table and,
// per route, its parameters, its answer's fields and its refusals — from the read API's OpenAPI
// document (src/worker/routes/openapi.ts, the routes' own schemas). Each generated part sits between
// `<!-- openapi:begin NAME -->` and `<!-- openapi:end -->`; the prose around them is hand-written.
// test/scripts/openapi-docs.test.ts fails when the file is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OPENAPI_PATH, readApiDocument, type OpenApiDocument } from "../src/worker/routes/openapi.ts";

export const READ_API_DOC = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "read-api.md");

type Schema = {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: Schema | boolean;
  description?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
};
type Parameter = { name: string; required?: boolean; description?: string; schema: Schema };
type Operation = {
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
};

const BEGIN = /<!-- openapi:begin (.+?) -->\n[\s\S]*?<!-- openapi:end -->/g;

/** A table cell: one line, pipes escaped. */
const cell = (text: string) => text.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");

/** A schema's type in a few words: `integer`, `number | null`, `"hour" | "day"`, `string[]`. */
function typeOf(schema: Schema): string {
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(" | ");
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const types = [schema.type ?? "any"].flat();
  return types.map((t) => (t === "array" && schema.items ? `${typeOf(schema.items).includes(" | ") ? `(${typeOf(schema.items)})` : typeOf(schema.items)}[]` : t)).join(" | ");
}

/** What a string must be, from its checks. */
function checksOf(schema: Schema): string {
  const checks: string[] = [];
  if (schema.pattern) checks.push(`\`${schema.pattern}\``);
  if (schema.minLength !== undefined && schema.maxLength !== undefined) checks.push(`${schema.minLength}–${schema.maxLength} characters`);
  else if (schema.maxLength !== undefined) checks.push(`at most ${schema.maxLength} characters`);
  return checks.join(", ");
}

/** One row per field, nested fields by path (`tools[].duration_ms.p50`), in the schema's order. */
function fieldRows(schema: Schema, prefix: string, rows: string[]): void {
  const object = schema.type === "array" ? schema.items : schema;
  if (!object?.properties) return;
  for (const [name, field] of Object.entries(object.properties)) {
    const path = `${prefix}${name}`;
    const optional = object.required?.includes(name) ? "" : " (optional)";
    rows.push(`| \`${path}\` | ${cell(typeOf(field))}${optional} | ${cell(field.description ?? "")} |`);
    const nested = [field, ...(field.anyOf ?? [])].find((s) => s.properties || s.items?.properties);
    if (nested) fieldRows(nested, `${path}${nested.type === "array" ? "[]" : ""}.`, rows);
    if (typeof field.additionalProperties === "object") {
      rows.push(`| \`${path}.*\` | ${cell(typeOf(field.additionalProperties))} | ${cell(field.additionalProperties.description ?? "")} |`);
    }
    const items = field.items;
    if (items && typeof items.additionalProperties === "object") {
      rows.push(`| \`${path}[].*\` | ${cell(typeOf(items.additionalProperties))} | ${cell(items.description ?? "")} |`);
    }
  }
}

function routeBlock(path: string, op: Operation): string {
  const lines = [`### \`GET ${path}\``, "", `**${op.summary ?? ""}.** ${op.description ?? ""}`, ""];
  const parameters = op.parameters ?? [];
  if (parameters.length === 0) lines.push("Parameters: none (any query is ignored).", "");
  else {
    lines.push("| parameter | type | meaning |", "|---|---|---|");
    for (const p of parameters) {
      const checks = checksOf(p.schema);
      lines.push(`| \`${p.name}\` | ${cell(typeOf(p.schema))}${checks ? `, ${cell(checks)}` : ""}${p.required ? "" : " (optional)"} | ${cell(p.description ?? "")} |`);
    }
    lines.push("");
  }
  const answer = op.responses["200"]?.content?.["application/json"]?.schema;
  if (answer) {
    lines.push("`200` answer:", "", "| field | type | meaning |", "|---|---|---|");
    const rows: string[] = [];
    fieldRows(answer, "", rows);
    lines.push(...rows, "");
  }
  const refusals = Object.entries(op.responses).filter(([status]) => status !== "200");
  lines.push(`Refusals (\`{"error", "code"}\`): ${refusals.map(([status, r]) => `\`${status}\` ${cell(r.description)}`).join("; ")}.`);
  return lines.join("\n");
}

/** Every parameter with the routes that take it and its meaning (the first route's description). */
function parametersBlock(operations: [string, Operation][]): string {
  const byName = new Map<string, { routes: string[]; description: string }>();
  for (const [path, op] of operations) {
    for (const p of op.parameters ?? []) {
      if (!path.startsWith("/v1/metrics/")) continue;
      const entry = byName.get(p.name) ?? { routes: [], description: p.description ?? "" };
      entry.routes.push(path.slice("/v1/metrics/".length));
      byName.set(p.name, entry);
    }
  }
  const lines = ["| parameter | routes (`/v1/metrics/…`) | meaning |", "|---|---|---|"];
  for (const [name, { routes, description }] of byName) lines.push(`| \`${name}\` | ${routes.join(", ")} | ${cell(description)} |`);
  return lines.join("\n");
}

/** The generated parts, by name: `parameters`, and `GET <path>` per route of the document. */
export function generatedParts(document: OpenApiDocument = readApiDocument()): Map<string, string> {
  const operations = Object.entries(document.paths ?? {}).map(([path, item]) => [path, (item as { get: Operation }).get] as [string, Operation]);
  const parts = new Map<string, string>([["parameters", parametersBlock(operations)]]);
  for (const [path, op] of operations) parts.set(`GET ${path}`, routeBlock(path, op));
  return parts;
}

/** docs/read-api.md with every generated part rewritten; throws when a part has no place or a place no part. */
export function renderReadApiDoc(markdown: string, parts: Map<string, string> = generatedParts()): string {
  const placed = new Set<string>();
  const out = markdown.replace(BEGIN, (_, name: string) => {
    const part = parts.get(name);
    if (part === undefined) throw new Error(`docs/read-api.md: no generated part named '${name}' (the route is not in ${OPENAPI_PATH})`);
    placed.add(name);
    return `<!-- openapi:begin ${name} -->\n${part}\n<!-- openapi:end -->`;
  });
  const missing = [...parts.keys()].filter((name) => !placed.has(name));
  if (missing.length > 0) throw new Error(`docs/read-api.md: no place for ${missing.join(", ")} (add <!-- openapi:begin NAME --><!-- openapi:end -->)`);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const before = readFileSync(READ_API_DOC, "utf8");
  const after = renderReadApiDoc(before);
  if (after === before) console.log("docs/read-api.md is up to date");
  else {
    writeFileSync(READ_API_DOC, after);
    console.log("docs/read-api.md: reference regenerated from the OpenAPI document");
  }
}
