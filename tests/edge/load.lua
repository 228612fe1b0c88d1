-- wrk script for make bench-edge: POSTs contract requests, half from a fixed set of queries
-- (repeated: the Cache API answers them after the first time) and half made distinct by a
-- counter (each one a cache miss the engine answers). Each connection is its own client
-- (CF-Connecting-IP), so the per-client rate limiter sees 100 clients. Counts responses by
-- status for the summary.
local queries = {
  "how do I publish a scoped package", "remove a dependency from package.json",
  "where does npm keep its cache", "install a package globally", "npm audit fix",
  "configure a registry", "two factor authentication", "workspaces", "npm ci vs npm install",
  "deprecate a version", "package-lock.json", "peer dependencies", "run a script",
  "link a local package", "semver ranges", "npm token", "outdated packages", "npx",
  "lifecycle scripts", "update npm",
}
-- LOAD_QUERIES: a file of queries, one a line, instead (make bench-scale: C++ questions).
local from_file = os.getenv("LOAD_QUERIES")
if from_file then
  queries = {}
  for line in io.lines(from_file) do
    if line ~= "" then table.insert(queries, line) end
  end
end
-- LOAD_MODE: the contract's mode for every request (fulltext unless told; hybrid in the
-- models' run of make bench-edge).
local mode = os.getenv("LOAD_MODE") or "fulltext"
local counter = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  fallbacks = 0
  ids = 0
end

request = function()
  counter = counter + 1
  ids = ids + 1
  local q
  if counter % 2 == 0 then
    q = queries[(counter / 2) % #queries + 1]
  else
    q = queries[counter % #queries + 1] .. " " .. tostring(counter) .. "x" .. tostring(math.random(1, 1e9))
  end
  local body = '{"query":"' .. q .. '","limit":5,"mode":"' .. mode .. '"}'
  local client = "198.51.100." .. tostring(ids % 100)
  return wrk.format("POST", "/v1/search/docs/query",
    { ["Content-Type"] = "application/json", ["CF-Connecting-IP"] = client }, body)
end

response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  -- Answers the engine gave lexically although the request asked for another mode.
  if mode ~= "fulltext" and string.find(body, '"fallbackApplied":true', 1, true) then
    fallbacks = fallbacks + 1
  end
end

done = function(summary, latency, requests)
  local total = {}
  local fell_back = 0
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for k, v in pairs(s) do total[k] = (total[k] or 0) + v end
    fell_back = fell_back + t:get("fallbacks")
  end
  local parts = {}
  for k, v in pairs(total) do table.insert(parts, string.format('"%d":%d', k, v)) end
  io.write(string.format('{"statuses":{%s},"fallbacks":%d,"requests":%d,"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},"rps":%.1f,"p50ms":%.2f,"p95ms":%.2f,"p99ms":%.2f}\n',
    table.concat(parts, ","), fell_back, summary.requests, summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.timeout, summary.errors.status, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000))
end
