-- The rollup lease (one rollup job per database at a time, src/worker/rollup/run.ts) moves off its own
-- `rollup_lease` row onto the two rows a run with work writes anyway: it is taken on the `ingest_epoch`
-- row, in the statement that closes the open call_batches rows (`lease_holder`, `lease_until_ms`), and
-- released on the `as_of_ms` row, in the statement that records as_of (`lease_holder` there names the
-- last job that released its lease). Taking and releasing the lease then write no row of their own.
ALTER TABLE rollup_state ADD COLUMN lease_holder TEXT;
ALTER TABLE rollup_state ADD COLUMN lease_until_ms INTEGER;
-- A job of the release before holds its lease until it expires (its own release updates the old row,
-- which is gone): the next runs leave the database to it meanwhile. Without a lease, nothing changes.
INSERT INTO rollup_state (name, value, lease_holder, lease_until_ms)
  SELECT 'ingest_epoch', 0, value ->> '$.holder', value ->> '$.until_ms' FROM rollup_state WHERE name = 'rollup_lease'
  ON CONFLICT (name) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until_ms = excluded.lease_until_ms;
DELETE FROM rollup_state WHERE name = 'rollup_lease';
