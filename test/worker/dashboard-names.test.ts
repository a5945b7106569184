// Producers' names on the dashboard (SPEC §3): isolated in <bdi>, control characters made visible,
// the whole name on hover, and every name — `.`, `..`, 150 emoji — with a page of its own.
import { describe, expect, it } from "vitest";
import { createProject, readSessionCookie } from "./helpers/projects.ts";
import { dayMs, getJson, seedHour } from "./metrics/seed.ts";
import { exports } from "cloudflare:workers";

const RANGE = "from=2026-11-01&to=2026-11-07";

async function html(path: string, key: string): Promise<{ status: number; body: string }> {
  const res = await exports.default.fetch(`http://worker${path}`, { headers: { cookie: await readSessionCookie(key) }, redirect: "manual" });
  return { status: res.status, body: await res.text() };
}

/** The page's text as shown: tags and attributes removed. */
function shownText(page: string): string {
  return page.replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>/g, "").replace(/<[^>]*>/g, "");
}

describe("dashboard names", () => {
  it("opens the pages of tools named '.', '..' and 150 emoji, each with its own figures", async () => {
    const p = await createProject();
    const names = [".", "..", "🚀".repeat(150), "a/b?c=d&e#f"];
    for (const [i, tool] of names.entries()) {
      await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-02"), tool, client: "c", counters: { calls: i + 1, ok: i + 1 } });
    }
    const overview = (await html(`/?${RANGE}`, p.read_key)).body;
    for (const [i, tool] of names.entries()) {
      const href = `/tool?name=${new URLSearchParams({ name: tool }).toString().slice(5)}&amp;from=2026-11-01&amp;to=2026-11-07`;
      expect(overview, tool).toContain(`href="${href}"`);
      const page = await html(href.replaceAll("&amp;", "&"), p.read_key);
      expect(page.status, tool).toBe(200);
      expect(page.body, tool).toContain(`data-card="calls" data-value="${i + 1}"`);
      const api = await getJson<{ tools: { calls: number }[] }>(`/v1/metrics/tools?${RANGE}&tool=${encodeURIComponent(tool)}`, p.read_key);
      expect(api.body.tools.map((t) => t.calls), tool).toEqual([i + 1]);
    }
    // The former address still leads to the same page.
    const old = await exports.default.fetch(`http://worker/tools/${encodeURIComponent("🚀".repeat(150))}?${RANGE}`, { redirect: "manual" });
    expect(old.status).toBe(308);
    expect(old.headers.get("location")).toBe(`/tool?name=${encodeURIComponent("🚀".repeat(150))}&${RANGE}`);
  });

  it("isolates every name in <bdi> and shows control characters instead of obeying them", async () => {
    const p = await createProject();
    const spoof = "txt.exe\u202Egpj.tool"; // would read "txt.exeloot.jpg" with the override obeyed
    const hidden = "search\u200Borders\u0007\u0085\u2066x\u2069";
    const long = "l".repeat(200);
    for (const tool of [spoof, hidden, long]) {
      await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-02"), tool, client: `client\u202E${tool.slice(0, 5)}`, counters: { calls: 5, ok: 5 } });
    }
    for (const path of [`/?${RANGE}`, `/tool?name=${encodeURIComponent(spoof)}&${RANGE}`]) {
      const page = (await html(path, p.read_key)).body;
      const text = shownText(page);
      // No override, isolate, zero-width or control character is left in the text a reader sees…
      expect(text, path).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b\u202a-\u202e\u2066-\u2069]/);
      // …each is a boxed code point, and the whole name is the title, escapes included.
      expect(page, path).toContain('<span class="cc">U+202E</span>');
      expect(page, path).toMatch(/<bdi class="name( wide)?" title="txt\.exe\\u\{202E\}gpj\.tool">/);
    }
    const overview = (await html(`/?${RANGE}`, p.read_key)).body;
    expect(overview).toContain(`title="search\\u{200B}orders\\u{0007}\\u{0085}\\u{2066}x\\u{2069}"`);
    // A long name is whole in its title (CSS cuts what is shown); every tool cell is a <bdi>.
    expect(overview).toContain(`<bdi class="name" title="${long}">${long}</bdi>`);
    const toolCells = [...overview.matchAll(/<td class="tool"[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1] ?? "");
    expect(toolCells.length).toBeGreaterThan(0);
    for (const cell of toolCells) expect(cell).toMatch(/<a [^>]*><bdi class="name"/);
    // A picker option cannot hold markup: its text is the visible name, cut to 48 code points.
    expect(overview).toMatch(/<option value="client\u202Etxt\.e"[^>]*>client\\u\{202E\}txt\.e<\/option>/);
  });
});
