-- wrk script for the benchmark: send a fixed number of requests, each with its own token.
--
--   wrk -t1 -c64 -d120s --timeout 30s -s plan.lua URL -- TOKENS_FILE METHOD PATH COUNT DONE_FILE
--
-- Request i carries the Bearer token on line ((i - 1) mod lines) + 1 of TOKENS_FILE, so with as
-- many lines as requests every request is a different user. After COUNT requests no more are
-- sent (delay() parks the connection); when the last answer arrives the thread stops and
-- creates DONE_FILE, and the harness ends wrk with SIGINT (wrk itself only knows durations).
-- done() prints one JSON line: answers by status and by error "code", latency percentiles
-- (microseconds, from wrk's own per-request histogram) and the seconds from the first request
-- sent to the last answer received (a monotonic clock, through LuaJIT's ffi).
-- One wrk thread only (-t1): the counters below are per thread.

local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clock_id, bench_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local clock = ffi.new("bench_timespec")

local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
  return tonumber(clock.tv_sec) + tonumber(clock.tv_nsec) / 1e9
end

local the_thread = nil

function setup(thread)
  the_thread = thread
end

-- per-thread state
local requests = {}
local count = 0
local reserved = 0 -- requests promised to a connection by delay()
local sent = 0
local answered = 0
local done_file = nil
-- Globals, not locals: done() runs in wrk's main Lua state and reads them with thread:get().
started_at = 0
finished_at = 0
last_2xx_at = -1
statuses = {}
codes = {}

function init(args)
  local tokens_file, method, path = args[1], args[2], args[3]
  count = tonumber(args[4])
  done_file = args[5]
  local tokens = {}
  for line in io.lines(tokens_file) do
    if line ~= "" then
      tokens[#tokens + 1] = line
    end
  end
  local body = nil
  if method ~= "GET" then
    body = "" -- Content-Length: 0
  end
  -- Built once here so request() costs nothing but a table lookup.
  for i = 1, math.min(count, #tokens) do
    requests[i] = wrk.format(method, path, { Authorization = "Bearer " .. tokens[i] }, body)
  end
  for i = #tokens + 1, count do
    requests[i] = requests[(i - 1) % #tokens + 1]
  end
end

-- wrk asks delay() once before each request() of a connection: the place to decide whether
-- this connection sends another request or waits out the run with every request handed out.
function delay()
  if reserved < count then
    reserved = reserved + 1
    return 0
  end
  return 3600 * 1000
end

function request()
  if reserved == 0 then
    -- wrk calls request() once before the run to check the script (no delay() before it):
    -- show it a request without handing one out.
    return requests[1]
  end
  sent = sent + 1
  if sent == 1 then
    started_at = now()
  end
  -- Beyond COUNT only when wrk re-sends after a broken connection (no delay() then): send
  -- nothing rather than a duplicate user; the lost request shows as a missing answer.
  return requests[sent] or ""
end

function response(status, headers, body)
  answered = answered + 1
  finished_at = now()
  if status >= 200 and status < 300 then
    last_2xx_at = finished_at
  end
  local key = tostring(status)
  statuses[key] = (statuses[key] or 0) + 1
  if status >= 400 and body then
    local code = string.match(body, '"code"%s*:%s*"([^"]*)"') or "unparsable"
    codes[code] = (codes[code] or 0) + 1
  end
  if answered >= count then
    local marker = io.open(done_file, "w")
    marker:close()
    wrk.thread:stop()
  end
end

local function json_counts(counts)
  local parts = {}
  for key, value in pairs(counts) do
    parts[#parts + 1] = string.format("%q: %d", key, value)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function done(summary, latency, _)
  local thread = the_thread
  local started = thread:get("started_at")
  local last_2xx = thread:get("last_2xx_at")
  local to_last_2xx = -1
  if last_2xx >= 0 then
    to_last_2xx = last_2xx - started
  end
  io.write(string.format(
    '{"answered": %d, "seconds": %.6f, "seconds_to_last_2xx": %.6f, "statuses": %s, "codes": %s,'
      .. ' "errors": {"connect": %d, "read": %d, "write": %d, "timeout": %d},'
      .. ' "latency_us": {"p50": %d, "p90": %d, "p99": %d, "max": %d, "mean": %.1f}}\n',
    summary.requests,
    thread:get("finished_at") - started,
    to_last_2xx,
    json_counts(thread:get("statuses")),
    json_counts(thread:get("codes")),
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean
  ))
end
