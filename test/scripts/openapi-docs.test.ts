// docs/read-api.md's reference parts are generated from the read API's OpenAPI document
// (`npm run openapi:docs`): the committed page must be exactly what the generator writes, and every
// route of the document must have its place on the page.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { READ_API_DOC, generatedParts, renderReadApiDoc } from "../../scripts/openapi-docs.ts";
import { readApiDocument } from "../../src/worker/routes/openapi.ts";

describe("docs/read-api.md's reference (run `npm run openapi:docs` after changing a read route or an answer's schema)", () => {
  const page = readFileSync(READ_API_DOC, "utf8");

  it("is what the generator writes from the OpenAPI document", () => {
    expect(page).toBe(renderReadApiDoc(page));
  });

  it("has a part for the parameters and for every route of the document, each with its fields", () => {
    const parts = generatedParts();
    const routes = Object.keys(readApiDocument().paths ?? {});
    expect([...parts.keys()].sort()).toEqual(["parameters", ...routes.map((path) => `GET ${path}`)].sort());
    for (const path of routes) expect(page).toContain(`<!-- openapi:begin GET ${path} -->\n### \`GET ${path}\``);
    // A field added to an answer's schema appears in its route's table.
    expect(parts.get("GET /v1/metrics/tools")).toContain("| `tools[].duration_ms.p95` | number \\| null |");
    expect(parts.get("GET /v1/metrics/sessions")).toContain("| `not_measurable` | (\"schema_tokens_per_session\" \\| \"cost_per_session_usd\")[] (optional) |");
  });

  it("refuses a page without a place for a route, or with a place for a route that does not exist", () => {
    const without = page.replace(/<!-- openapi:begin GET \/v1\/metrics\/pairs -->[\s\S]*?<!-- openapi:end -->/, "");
    expect(() => renderReadApiDoc(without)).toThrow(/no place for GET \/v1\/metrics\/pairs/);
    const extra = `${page}\n<!-- openapi:begin GET /v1/metrics/nothing -->\n<!-- openapi:end -->\n`;
    expect(() => renderReadApiDoc(extra)).toThrow(/no generated part named 'GET \/v1\/metrics\/nothing'/);
  });

  it("notices a stale part", () => {
    const stale = page.replace("| `pairs[].count` | integer |", "| `pairs[].count` | number |");
    expect(stale).not.toBe(page);
    expect(renderReadApiDoc(stale)).toBe(page);
  });
});
