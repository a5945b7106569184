-- More than one database (SPEC §7): the directory, read only in the first database (binding `DB`).
-- A project without a row here lives in the first database: a deployment that had one database
-- keeps every project where it is, and this migration changes no stored row. Every database gets
-- the table (every migration goes to every database); only the first one's rows count.
CREATE TABLE project_databases (
  project_id TEXT PRIMARY KEY,
  -- The binding name of the project's database in wrangler.toml ("DB", "DB_2", …).
  database_name TEXT NOT NULL
);
