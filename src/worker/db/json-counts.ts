// Counts kept as a JSON object {"<key>": n} (a row's duration histogram, a day's pairs), added to in
// place. D1 counts every element a statement steps through as a row read, so an addition steps
// through the added object only and looks each of its keys up in the stored one, instead of
// stepping through both and regrouping them.

/** A JSON path naming the object key held in the SQL text expression `key`, quotes and backslashes escaped. */
export const labelPathSql = (key: string) => `('$."' || replace(replace(${key}, '\\', '\\\\'), '"', '\\"') || '"')`;

/**
 * `stored` plus `added`, key by key; a key whose sum is 0 is dropped (json_patch removes a key set
 * to null). Keys keep no particular order.
 */
export const addCountsSql = (stored: string, added: string) => `CASE WHEN ${added} = '{}' THEN ${stored} ELSE json_patch(${stored}, (
        SELECT json_group_object(a.key, NULLIF(COALESCE(${stored} ->> ${labelPathSql("a.key")}, 0) + a.value, 0))
        FROM json_each(${added}) AS a)) END`;
