// Child processes: stdio servers of both SDK majors, the exit flush on beforeExit/SIGINT/SIGTERM
// within 1 s, nothing keeping the process alive, and debug output on stderr only (SPEC §4).
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, onTestFinished, test } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioClientV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientV2 } from "@modelcontextprotocol/client/stdio";
import { argsHash } from "../../src/shared/index.ts";
import { invalidPayloads, startCaptureServer, type CaptureServer } from "./helpers/capture-server.ts";
import {
  CANARY_ARG,
  CANARY_DESCRIPTION,
  CANARY_RESULT,
  FLAVOURS,
  callAndCapture,
  scenario,
  type ClientLike,
  type Flavour,
} from "./helpers/fixtures.ts";

const STDIO_SERVER = fileURLToPath(new URL("./helpers/stdio-server.ts", import.meta.url));
const EXIT_CHILD = fileURLToPath(new URL("./helpers/exit-child.ts", import.meta.url));

// Tests run concurrently: each cleans up only what it started.
function cleanUpChild(child: ChildProcess): void {
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
}
async function capture(mode: "accept" | "hang" = "accept") {
  const server = await startCaptureServer(mode);
  onTestFinished(() => server.close());
  return server;
}

async function stdioClient(flavour: Flavour, args: string[]): Promise<ClientLike> {
  const params = { command: process.execPath, args: [STDIO_SERVER, flavour, ...args], stderr: "pipe" as const };
  if (flavour.startsWith("v1")) {
    const client = new ClientV1({ name: "stdio-client", version: "1.0.0" });
    await client.connect(new StdioClientV1(params));
    return {
      callTool: (name, callArgs, options) => client.callTool({ name, arguments: callArgs }, undefined, options),
      listTools: () => client.listTools(),
      close: () => client.close(),
    };
  }
  const client = new ClientV2({ name: "stdio-client", version: "1.0.0" });
  await client.connect(new StdioClientV2(params));
  return {
    callTool: (name, callArgs, options) => client.callTool({ name, arguments: callArgs }, options),
    listTools: () => client.listTools(),
    close: () => client.close(),
  };
}

// Sequential, with room for slow child start-up on a loaded machine (two Node processes each).
describe.each(FLAVOURS)("%s over stdio in a child process", (flavour) => {
  test("every outcome and is_empty case once, a cancellation, answers as unwatched, transport stdio, delivered by the exit flush", { timeout: 30_000 }, async () => {
    const ingest = await capture();
    const key = `mp_live_stdio_${flavour}`;
    const [watched, unwatched] = await Promise.all([stdioClient(flavour, [ingest.url, key]), stdioClient(flavour, [ingest.url, "-"])]);
    const calls = scenario(flavour);
    for (const call of calls) {
      expect(await callAndCapture(watched, call.name, call.args)).toEqual(await callAndCapture(unwatched, call.name, call.args));
    }
    const controller = new AbortController();
    const cancelled = callAndCapture(watched, "wait_for_cancel", {}, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort("gave up");
    expect(((await cancelled) as { error?: unknown }).error).toBeDefined();
    calls.push({ name: "wait_for_cancel", args: {}, outcome: "crashed", is_empty: false });
    // Fewer than 30 payloads and a 5 s interval: only the exit flush can deliver them this fast.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ingest.requests).toHaveLength(0);
    await Promise.all([watched.close(), unwatched.close()]);
    const payloads = await ingest.waitForPayloads(calls.length + 1, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const sent = ingest.payloads().filter((p) => p.type === "call");
    expect(sent.map((p) => [p.tool_name, p.outcome, p.is_empty, p.args_hash])).toEqual(
      calls.map((call) => [call.name, call.outcome, call.is_empty, argsHash(call.args)]),
    );
    const startup = payloads.find((p) => p.type === "startup")!;
    expect(startup).toMatchObject({ transport: "stdio", client_name: "stdio-client" });
    // docs/sdk.md "Where a session comes from", stdio: the connection is the conversation — one
    // random id for its startup and every call (SPEC §4 case 4).
    const sessions = new Set(ingest.payloads().map((p) => p.session_id));
    expect([...sessions]).toHaveLength(1);
    expect([...sessions][0]).toMatch(/^s_[0-9a-f]{12}$/);
    expect(invalidPayloads(ingest.payloads())).toEqual([]);
    for (const request of ingest.requests) {
      for (const canary of [CANARY_ARG, CANARY_RESULT, CANARY_DESCRIPTION]) expect(request.body).not.toContain(canary);
    }
  });
});

test("debug: every payload on stderr, stdout carries only JSON-RPC", { timeout: 20_000 }, async () => {
  const ingest = await capture();
  const child = spawn(process.execPath, [STDIO_SERVER, "v1-mcp", ingest.url, "mp_live_debug", "debug"], { stdio: ["pipe", "pipe", "pipe"] });
  cleanUpChild(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const send = (message: object) => child.stdin!.write(`${JSON.stringify(message)}\n`);
  send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw-client", version: "1" } } });
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "answer", arguments: { q: CANARY_ARG } } });
  send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "throws", arguments: {} } });
  const deadline = Date.now() + 5_000;
  while (!stdout.includes('"id":3') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  child.stdin!.end();
  const exit = await new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  expect(exit).toBe(0);
  const lines = stdout.split("\n").filter((line) => line.length > 0);
  expect(lines.length).toBe(3);
  for (const line of lines) {
    const message = JSON.parse(line) as { jsonrpc?: string };
    expect(message.jsonrpc).toBe("2.0");
  }
  expect(stdout).not.toContain("mcpulse");
  expect(stderr).toContain("[mcpulse] sending 3 payload(s)");
  expect(stderr).toMatch(/\[mcpulse\] \{"v":1,"type":"call".*"tool_name":"throws".*"outcome":"crashed"/);
  expect(stderr).not.toContain(CANARY_ARG);
  expect(stderr).not.toContain("mp_live_debug"); // the key is never logged
});

interface ExitRun {
  ingest: CaptureServer;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
  ready: Promise<number>;
  /** What the child wrote on stderr so far (the SDK's drop report). */
  stderr: () => string;
}

/**
 * A send timeout of an hour in the child, far beyond any test's timeout: a process whose sends hang
 * can then end only through the 1 s exit-flush cap, so a broken cap fails the test by its own
 * timeout, on any machine — no upper bound in milliseconds needed.
 */
const HOUR_MS = 3_600_000;

async function runExitChild(ingestMode: "accept" | "hang", calls: number | string, mode: "idle" | "wait" | "host-handler"): Promise<ExitRun> {
  const ingest = await capture(ingestMode);
  const args = [EXIT_CHILD, ingest.url, `mp_live_exit_${mode}`, String(calls), mode, ...(ingestMode === "hang" ? [String(HOUR_MS)] : [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  cleanUpChild(child);
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    process.stderr.write(chunk);
  });
  const ready = new Promise<number>((resolve) => child.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("ready") && resolve(Date.now())));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, atMs: Date.now() })),
  );
  return { ingest, child, exited, ready, stderr: () => stderr };
}

/** The SDK's drop report lines in a child's stderr. */
function dropLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => line.startsWith("[mcpulse] gave up on"));
}

describe("exit flush", { timeout: 20_000 }, () => {
  test("beforeExit: the waiting payloads go out and the process ends on its own", async () => {
    const run = await runExitChild("accept", 5, "idle");
    const { code } = await run.exited;
    expect(code).toBe(0);
    expect(run.ingest.calls()).toHaveLength(5);
    expect(run.ingest.startups()).toHaveLength(1);
    expect(dropLines(run.stderr())).toEqual([]);
  });

  test("beforeExit with a hanging endpoint and a send in flight: the exit flush gives up at its 1 s cap and the process ends", async () => {
    // 30 calls and the startup go at once and hang; then 5 more wait for the exit flush.
    const run = await runExitChild("hang", "30+5", "idle");
    const readyAt = await run.ready;
    const { code, atMs } = await run.exited;
    expect(code).toBe(0);
    expect(atMs - readyAt).toBeGreaterThanOrEqual(900); // the exit flush ran and waited, up to 1 s
    expect(run.ingest.calls().length).toBeGreaterThanOrEqual(30);
    // The process ended though its sends never would (an hour's timeout): the in-flight socket did
    // not keep it alive, and the exit flush stopped at its cap, giving up on everything and saying so.
    const lines = dropLines(run.stderr());
    expect(lines.length, run.stderr()).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(line).toMatch(/: \d+ exit flush out of time \(1 s: not sent or not confirmed\)$/);
    expect(lines.reduce((sum, line) => sum + Number(/gave up on (\d+) payload/.exec(line)![1]), 0)).toBe(36);
  });

  test.each(["SIGTERM", "SIGINT"] as const)("%s: one final flush, then the signal's normal effect", async (signal) => {
    const run = await runExitChild("accept", 4, "wait");
    await run.ready;
    run.child.kill(signal);
    const exit = await run.exited;
    expect(exit.signal).toBe(signal);
    expect(run.ingest.calls()).toHaveLength(4);
  });

  test("SIGTERM with a hanging endpoint: the final flush gives up at its 1 s cap, then the signal terminates", async () => {
    const run = await runExitChild("hang", 4, "wait");
    await run.ready;
    const sentAt = Date.now();
    run.child.kill("SIGTERM");
    const exit = await run.exited;
    expect(exit.signal).toBe("SIGTERM");
    expect(exit.atMs - sentAt).toBeGreaterThanOrEqual(900); // it did wait for the flush, up to 1 s
    expect(run.ingest.calls()).toHaveLength(4); // the request arrived even if never answered
    // The host keeps the process alive and the send would hang for an hour: only the cap ended the
    // flush, and the 4 calls and the startup it sent are reported as out of its time.
    const lines = dropLines(run.stderr());
    expect(lines, run.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(/: 5 exit flush out of time \(1 s: not sent or not confirmed\)$/);
  });

  test("a host with its own SIGTERM handler keeps control of its exit", async () => {
    const run = await runExitChild("accept", 3, "host-handler");
    await run.ready;
    run.child.kill("SIGTERM");
    const exit = await run.exited;
    expect(exit.code).toBe(7);
    expect(run.ingest.calls()).toHaveLength(3);
  });
});
