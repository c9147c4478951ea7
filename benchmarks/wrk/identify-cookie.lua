-- wrk script: cookie-path identifications over the visitors a capacity server started by hand seeded.
-- Usage: wrk -t2 -c64 -d10s -s benchmarks/wrk/identify-cookie.lua http://127.0.0.1:3000/api/visitor
-- Reads JANITOR_BENCH_VISITORS (default /tmp/janitor-bench-visitors.txt), the cookie file that
-- `janitor-capacity serve --visitors N --cookies FILE` writes: one "visitor-id<TAB>payload-json" per line.

local visitors = {}
local path = os.getenv("JANITOR_BENCH_VISITORS") or "/tmp/janitor-bench-visitors.txt"
for line in io.lines(path) do
  local id, payload = line:match("^(%S+)\t(.+)$")
  if id then visitors[#visitors + 1] = { id = id, payload = payload } end
end
assert(#visitors > 0, "no visitors in " .. path)

local counter = 0

request = function()
  counter = counter + 1
  local v = visitors[(counter % #visitors) + 1]
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["Cookie"] = "__visitor=" .. v.id,
  }, v.payload)
end

done = function(summary, latency)
  io.write(string.format("requests %d  p50 %.2f ms  p95 %.2f ms  p99 %.2f ms  non-2xx %d\n",
    summary.requests, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, summary.errors.status))
end
