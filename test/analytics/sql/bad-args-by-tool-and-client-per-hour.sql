SELECT
  intDiv(double10, 3600000) * 3600000 AS bucket_ms,
  blob1 AS tool,
  blob2 AS client,
  SUM(_sample_interval * double1) AS sum_calls,
  SUM(_sample_interval * double4) AS sum_bad_args,
  MAX(_sample_interval) AS sample_interval_max
FROM mcpulse_calls
WHERE index1 = 'prj_golden'
  AND double10 >= 1796083200000
  AND double10 < 1796169600000
  AND blob2 = 'claude-ai'
  AND blob4 IN ('bad_args', 'crashed')
GROUP BY intDiv(double10, 3600000) * 3600000, blob1, blob2
ORDER BY sum_calls DESC, intDiv(double10, 3600000) * 3600000, blob1, blob2
LIMIT 10001
FORMAT JSON