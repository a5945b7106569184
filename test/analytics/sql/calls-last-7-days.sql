SELECT
  SUM(_sample_interval * double1) AS sum_calls,
  MAX(_sample_interval) AS sample_interval_max
FROM mcpulse_calls
WHERE index1 = 'prj_golden'
  AND double10 >= 1795608000000
  AND double10 < 1796212800000
ORDER BY sum_calls DESC
LIMIT 10001
FORMAT JSON