SELECT
  index1 AS project_id,
  intDiv(double10, 3600000) * 3600000 AS hour_ms,
  blob1 AS tool,
  SUM(_sample_interval * double1) AS calls,
  SUM(_sample_interval * (_sample_interval - 1) * double1 * double1) AS variance,
  MAX(_sample_interval) AS sample_interval_max
FROM mcpulse_calls
WHERE double10 >= 1796202000000
  AND double10 < 1796212800000
GROUP BY index1, intDiv(double10, 3600000) * 3600000, blob1
ORDER BY index1, intDiv(double10, 3600000) * 3600000, blob1
LIMIT 10001
FORMAT JSON