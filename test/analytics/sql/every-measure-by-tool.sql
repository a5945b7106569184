SELECT
  blob1 AS tool,
  SUM(_sample_interval * double1) AS sum_calls,
  SUM(_sample_interval * double3) AS sum_empty,
  SUM(_sample_interval * double4) AS sum_bad_args,
  SUM(_sample_interval * double5) AS sum_tool_error,
  SUM(_sample_interval * double6) AS sum_crashed,
  SUM(_sample_interval * double7) AS sum_duration_ms_sum,
  SUM(_sample_interval * double8) AS sum_response_bytes_sum,
  quantileExactWeighted(0.5)(double11, toUInt64(_sample_interval * double1)) AS p50,
  quantileExactWeighted(0.95)(double11, toUInt64(_sample_interval * double1)) AS p95,
  quantileExactWeighted(0.99)(double11, toUInt64(_sample_interval * double1)) AS p99,
  count(DISTINCT blob12) AS distinct_args,
  count(DISTINCT blob13) AS distinct_sessions,
  MAX(_sample_interval) AS sample_interval_max
FROM mcpulse_calls
WHERE index1 = 'prj_golden'
  AND double10 >= 1795608000000
  AND double10 < 1796212800000
GROUP BY blob1
ORDER BY sum_calls DESC, blob1
LIMIT 10001
FORMAT JSON