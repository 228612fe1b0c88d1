-- wrk script for make bench-serve: POSTs contract requests, one line of $BODIES after another
-- (hybrid questions mixed with filters, paging and fulltext; tests/bench/serve.sh writes them),
-- with a bearer token when $TOKEN is set. Counts responses by status; prints one JSON summary.
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do
  if line ~= "" then table.insert(bodies, line) end
end
local token = os.getenv("TOKEN")
local threads = {}

function setup(thread)
  thread:set("offset", #threads * 7919)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  n = 0
end

request = function()
  n = n + 1
  local body = bodies[(offset + n) % #bodies + 1]
  local headers = { ["Content-Type"] = "application/json" }
  if token then headers["Authorization"] = "Bearer " .. token end
  return wrk.format("POST", "/v1/search/docs/query", headers, body)
end

response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

done = function(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do total[k] = (total[k] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(total) do table.insert(parts, string.format('"%d":%d', k, v)) end
  io.write(string.format('{"statuses":{%s},"requests":%d,"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},"rps":%.1f,"p50ms":%.1f,"p95ms":%.1f,"p99ms":%.1f,"maxms":%.1f}\n',
    table.concat(parts, ","), summary.requests, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
