-- 0027: a project's tool versions (SPEC §2.5) as ONE row, a JSON object from the version
-- (`["tool","schema_hash","description_hash"]`, a JSON array as text so no name can collide with a
-- separator) to `[first_seen_ms, last_seen_ms, startups, description_norm]`, instead of a row per
-- version. D1 bills rows written, not bytes: every startups chunk added its startups to each
-- version they listed — a row per registered tool per rollup run with a new session (bench:cost,
-- shared HTTP server: 0.38 rows per call); now it writes one row per project. `tool_versions` stays
-- as a view with the same columns, so every reader is unchanged.

CREATE TABLE tool_version_sets (
  project_id TEXT PRIMARY KEY,
  versions_json TEXT NOT NULL
) WITHOUT ROWID;

INSERT INTO tool_version_sets (project_id, versions_json)
  SELECT project_id, json_group_object(json_array(tool_name, schema_hash, description_hash),
    json_array(first_seen_ms, last_seen_ms, startups, description_norm))
  FROM (SELECT * FROM tool_versions ORDER BY project_id, tool_name, schema_hash, description_hash)
  GROUP BY project_id;

DROP TABLE tool_versions;

CREATE VIEW tool_versions AS
  SELECT s.project_id AS project_id, v.key ->> 0 AS tool_name, v.key ->> 1 AS schema_hash, v.key ->> 2 AS description_hash,
    v.value ->> 3 AS description_norm, v.value ->> 0 AS first_seen_ms, v.value ->> 1 AS last_seen_ms, v.value ->> 2 AS startups
  FROM tool_version_sets AS s, json_each(s.versions_json) AS v;
