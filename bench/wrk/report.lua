-- wrk script: optional random pages of a listing, and a one-line JSON summary at the end.
--   LISTING_PATH=/api/v1/aggregations/1/annotators?sort=-competence&limit=50 N_ROWS=10000 \
--     wrk -t2 -c20 -d15s -s bench/wrk/report.lua http://127.0.0.1:8000
-- Without LISTING_PATH it requests the URL's own path (e.g. /healthz).
local path = os.getenv("LISTING_PATH")
local n_rows = tonumber(os.getenv("N_ROWS") or "10000")
local page = tonumber(os.getenv("PAGE_SIZE") or "50")
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end

function init(args)
  math.randomseed(os.time() * 1000 + (id or 0) * 7919)
end

request = function()
  if path == nil or path == "" then
    return wrk.format("GET")
  end
  local offset = math.random(0, math.floor((n_rows - 1) / page)) * page
  return wrk.format("GET", path .. "&offset=" .. offset)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, ' ..
    '"max_us": %d, "socket_errors": %d, "non_2xx": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
