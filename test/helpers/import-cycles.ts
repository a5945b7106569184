// The cycle search both import-graph tests use (test/worker/imports.test.ts for the worker,
// test/sdk/imports.test.ts for the SDK). Plain TypeScript: it runs in workerd and in Node alike.

/** Every cycle found by a depth-first walk of `graph` (file → files it imports), each as the files around it. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next) && graph.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}
