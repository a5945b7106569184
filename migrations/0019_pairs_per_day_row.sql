-- 0019: a day's tool pairs (SPEC §2.4) of one project and client as ONE row, a JSON object from the
-- pair (`["from_tool","to_tool"]`, a JSON array as text so no tool name can collide with a
-- separator) to its count, instead of a row per pair. D1 bills rows written, not bytes: a calls
-- chunk used to upsert one row per distinct pair it changed (~0.56 rows per call at low traffic,
-- bench:cost); now it writes one row per (day, client) it touches. The read side expands the
-- object with json_each. Pairs whose count is 0 are dropped from the object, and an empty object's
-- row is deleted, as rows with pair_count 0 were.

CREATE TABLE pair_days (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  client_name TEXT NOT NULL,
  pairs_json TEXT NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, client_name)
) WITHOUT ROWID;

INSERT INTO pair_days (project_id, day_start_ms, client_name, pairs_json)
  SELECT project_id, day_start_ms, client_name, json_group_object(json_array(from_tool, to_tool), pair_count)
  FROM (SELECT * FROM tool_pair_days WHERE pair_count <> 0 ORDER BY project_id, day_start_ms, client_name, from_tool, to_tool)
  GROUP BY project_id, day_start_ms, client_name;

DROP TABLE tool_pair_days;
