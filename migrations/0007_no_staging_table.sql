-- 0007: the rollup derives each counter row's change in a CTE in both counter upserts
-- (src/worker/rollup/calls.ts), so its staging table, empty between chunks, is dropped: a row and
-- its delete per touched counter row fewer (docs/scaling.md, bench:cost).

DROP TABLE rollup_chunk_deltas;
