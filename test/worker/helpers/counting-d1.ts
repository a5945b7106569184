// A D1 database that records every statement it executes (all/first/run/raw, and each statement of
// a batch): the read-side tests and bench:read count a request's D1 queries with it.

export type CountedD1 = { db: D1Database; statements: string[] };

/** `db` with every executed statement's SQL recorded in `statements`. */
export function countingDb(db: D1Database): CountedD1 {
  const statements: string[] = [];
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
        if (prop === "all" || prop === "first" || prop === "run" || prop === "raw") {
          return (...args: unknown[]) => {
            statements.push(sql);
            return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, statement);
    return proxy;
  };
  const counted = new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (prop === "batch") {
        return (list: D1PreparedStatement[]) => {
          for (const _ of list) statements.push("(batch)");
          return target.batch(list.map((s) => real.get(s) ?? s));
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db: counted, statements };
}
