SELECT
  intDiv(double10, 86400000) * 86400000 AS bucket_ms,
  SUM(_sample_interval * double1) AS sum_calls,
  quantileExactWeighted(0.95)(double11, toUInt64(_sample_interval * double1)) AS p95,
  MAX(_sample_interval) AS sample_interval_max
FROM mcpulse_calls
WHERE index1 = 'prj_golden'
  AND double10 >= 1793491200000
  AND double10 < 1796034600000
  AND blob1 = 'it''s a \\ tool ''quoted'' ünïcödé 🎉'
GROUP BY intDiv(double10, 86400000) * 86400000
ORDER BY sum_calls DESC, intDiv(double10, 86400000) * 86400000
LIMIT 10001
FORMAT JSON