-- wrk script: prints p50/p95/p99 for any GET route.
done = function(summary, latency)
  io.write(string.format("requests %d  p50 %.3f ms  p95 %.3f ms  p99 %.3f ms  non-2xx %d\n",
    summary.requests, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, summary.errors.status))
end
