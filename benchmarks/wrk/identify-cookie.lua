-- wrk script: cookie-path identifications over the visitors the bench server seeded.
-- Usage: wrk -t2 -c64 -d10s -s benchmarks/wrk/identify-cookie.lua http://127.0.0.1:3000/api/visitor
-- Reads JANITOR_BENCH_VISITORS (default /tmp/janitor-bench-visitors.txt): one "visitor-id<TAB>timezone" per line.

local visitors = {}
local path = os.getenv("JANITOR_BENCH_VISITORS") or "/tmp/janitor-bench-visitors.txt"
for line in io.lines(path) do
  local id, zone = line:match("^(%S+)\t(%S+)$")
  if id then visitors[#visitors + 1] = { id = id, zone = zone } end
end
assert(#visitors > 0, "no visitors in " .. path)

local counter = 0

request = function()
  counter = counter + 1
  local v = visitors[(counter % #visitors) + 1]
  local body = '{"signals":{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36",'
    .. '"platform":"Linux x86_64","languages":["en-US"],"timezone":"' .. v.zone .. '",'
    .. '"screen":{"width":1920,"height":1080,"colorDepth":24,"pixelRatio":1},'
    .. '"hardware":{"hardwareConcurrency":8,"deviceMemory":8,"maxTouchPoints":0}}}'
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["Cookie"] = "__visitor=" .. v.id,
  }, body)
end

done = function(summary, latency)
  io.write(string.format("requests %d  p50 %.2f ms  p95 %.2f ms  p99 %.2f ms  non-2xx %d\n",
    summary.requests, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, summary.errors.status))
end
