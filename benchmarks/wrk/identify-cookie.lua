-- wrk script: cookie-path identifications over the visitors a capacity server started by hand seeded.
-- Usage: wrk -t2 -c64 -d10s -s benchmarks/wrk/identify-cookie.lua http://127.0.0.1:3000/api/visitor
-- Reads JANITOR_BENCH_VISITORS (default /tmp/janitor-bench-visitors.txt), the cookie file that
-- `janitor-capacity serve --visitors N --cookies FILE` writes: one "visitor-id<TAB>payload-json" per line.
-- Each request carries the visitor's signals and a new behaviour summary, as janitor.js sends them (its page
-- age and event counts change on almost every page load); JANITOR_BENCH_IDENTICAL=1 re-sends the payload
-- unchanged instead.

local visitors = {}
local path = os.getenv("JANITOR_BENCH_VISITORS") or "/tmp/janitor-bench-visitors.txt"
for line in io.lines(path) do
  local id, payload = line:match("^(%S+)\t(.+)$")
  if id then visitors[#visitors + 1] = { id = id, payload = payload } end
end
assert(#visitors > 0, "no visitors in " .. path)

local identical = os.getenv("JANITOR_BENCH_IDENTICAL") == "1"
local counter = 0

-- The payload of visit n: the signals, and the behaviour summary janitor.js would send on that visit.
local function with_behavior(payload, n)
  local behavior = string.format(
    '"behavior":{"pageAgeMs":%d,"mouseMoveCount":%d,"pointerDownCount":%d,"keyDownCount":%d,' ..
    '"scrollCount":%d,"visibilityChangeCount":%d}',
    800 + n * 1733 % 60000, n * 7 % 300, n % 5, n * 3 % 40, n % 11, n % 2)
  return payload:gsub("}%s*$", "," .. behavior .. "}", 1)
end

request = function()
  counter = counter + 1
  local v = visitors[(counter % #visitors) + 1]
  local body = v.payload
  if not identical then body = with_behavior(v.payload, counter) end
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
