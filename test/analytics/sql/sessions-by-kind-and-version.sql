SELECT
  blob6 AS session_kind,
  blob8 AS protocol_version,
  SUM(_sample_interval * double1) AS sum_calls,
  count(DISTINCT blob13) AS distinct_sessions,
  MAX(_sample_interval) AS sample_interval_max
FROM mcpulse_calls
WHERE index1 = 'prj_golden'
  AND double10 >= 1795608000000
  AND double10 < 1796212800000
  AND blob7 = 'http'
  AND blob13 = ''
GROUP BY blob6, blob8
ORDER BY sum_calls DESC, blob6, blob8
LIMIT 10001
FORMAT JSON