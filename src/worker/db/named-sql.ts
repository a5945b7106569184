// SQL by name: D1's bind() is positional only, so each `:name` becomes one `?N` in order of first
// use.

/** A value D1 binds. */
export type SqlValue = string | number | boolean | null;
export type SqlParams = Readonly<Record<string, SqlValue>>;

export type CompiledSql = {
  sql: string;
  /** The names, in `?N` order (`names[0]` is `?1`). */
  names: readonly string[];
};

const NAME = /^[a-z_][a-z0-9_]*/;
/** Unbounded is fine: the statements are constants, a few dozen. */
const compiled = new Map<string, CompiledSql>();

/** Throws on a positional `?`, which would bind by place again. */
export function compileNamed(sql: string): CompiledSql {
  const known = compiled.get(sql);
  if (known) return known;
  const names: string[] = [];
  let out = "";
  let i = 0;
  const copyQuoted = (quote: string) => {
    let j = i + 1;
    for (;;) {
      const k = sql.indexOf(quote, j);
      if (k < 0) throw new Error(`named SQL: unterminated ${quote}`);
      if (sql[k + 1] === quote) j = k + 2;
      else {
        out += sql.slice(i, k + 1);
        i = k + 1;
        return;
      }
    }
  };
  const copyUntil = (end: string) => {
    const k = sql.indexOf(end, i);
    const stop = k < 0 ? sql.length : k + end.length;
    out += sql.slice(i, stop);
    i = stop;
  };
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') copyQuoted(c);
    else if (c === "-" && sql[i + 1] === "-") copyUntil("\n");
    else if (c === "/" && sql[i + 1] === "*") copyUntil("*/");
    else if (c === "?") throw new Error(`named SQL: positional parameter at ${JSON.stringify(sql.slice(i, i + 12))}`);
    else if (c === ":" && !/[\w:]/.test(sql[i - 1] ?? " ")) {
      const name = NAME.exec(sql.slice(i + 1))?.[0];
      if (!name || /\w/.test(sql[i + 1 + name.length] ?? " ")) throw new Error(`named SQL: a parameter is :snake_case, not ${JSON.stringify(sql.slice(i, i + 20))}`);
      let n = names.indexOf(name);
      if (n < 0) n = names.push(name) - 1;
      out += `?${n + 1}`;
      i += 1 + name.length;
    } else {
      out += c;
      i += 1;
    }
  }
  const result = { sql: out, names };
  compiled.set(sql, result);
  return result;
}

/** The values of `sql`'s parameters in `?N` order; throws on a name missing from `params` or one `sql` does not use. */
export function namedValues(sql: string, params: SqlParams = {}): SqlValue[] {
  return valuesOf(compileNamed(sql).names, params);
}

function valuesOf(names: readonly string[], params: SqlParams): SqlValue[] {
  const missing = names.filter((n) => params[n] === undefined);
  if (missing.length > 0) throw new Error(`named SQL: no value for ${missing.map((n) => `:${n}`).join(", ")}`);
  const unused = Object.keys(params).filter((n) => !names.includes(n));
  if (unused.length > 0) throw new Error(`named SQL: the statement has no ${unused.map((n) => `:${n}`).join(", ")}`);
  return names.map((n) => params[n]!);
}

export function namedStatement(db: D1Database, sql: string, params: SqlParams = {}): D1PreparedStatement {
  const compiled = compileNamed(sql);
  const values = valuesOf(compiled.names, params);
  const statement = db.prepare(compiled.sql);
  return values.length > 0 ? statement.bind(...values) : statement;
}

/**
 * UNION ALL arms built from one list line up by name, so an added column cannot shift the others;
 * without `fill` it is never silently 0.
 */
export function columnsByName(columns: readonly string[], values: Readonly<Record<string, string>>, fill?: string): string {
  const unknown = Object.keys(values).filter((c) => !columns.includes(c));
  if (unknown.length > 0) throw new Error(`columnsByName: no column ${unknown.join(", ")} in the list`);
  return columns.map((c) => {
    const value = values[c] ?? fill;
    if (value === undefined) throw new Error(`columnsByName: no value for column ${c}`);
    return value === c ? c : `${value} AS ${c}`;
  }).join(", ");
}
