// The floor a D1-backed ingest cannot go below (bench:ingest baseline): read the body, parse the
// JSON, answer 202, and in waitUntil insert the calls into one D1 table with one statement.
// No auth, no validation, no budget, no sessions, no Analytics Engine.
export default {
  async fetch(request, env, ctx) {
    const body = await request.json();
    const calls = Array.isArray(body?.batch) ? body.batch : [];
    ctx.waitUntil(
      env.DB.prepare(
        `INSERT INTO floor_calls (session_id, client_name, tool_name, started_at, duration_ms, outcome,
           response_bytes, is_empty, args_hash)
         SELECT value ->> 'session_id', value ->> 'client_name', value ->> 'tool_name', value ->> 'started_at',
           value ->> 'duration_ms', value ->> 'outcome', value ->> 'response_bytes', value ->> 'is_empty',
           value ->> 'args_hash'
         FROM json_each(?1)`,
      )
        .bind(JSON.stringify(calls))
        .run(),
    );
    return new Response(null, { status: 202 });
  },
};
