-- Shared by the scripts of bench/api.py: numbers the wrk threads (the global `tid` of each
-- thread's Lua state, 0-based) and prints one machine-readable line when the run is done:
--   WRK_JSON {"requests":..,"duration_us":..,"latency_us":{..},"errors":{..},"threads":[..]}
-- "threads" holds what each thread's script left in its globals `codes` (responses by
-- status), `applied`, `unmatched` and `starved` (control.lua keeps them; paths.lua does
-- not read the responses, so its threads report nothing there).

local M = { threads = {} }

function M.setup(thread)
  thread:set("tid", #M.threads)
  M.threads[#M.threads + 1] = thread
end

local function counts(t)
  local parts = {}
  if type(t) == "table" then
    for k, v in pairs(t) do
      parts[#parts + 1] = string.format('"%s":%d', tostring(k), v)
    end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function number(v)
  if type(v) ~= "number" then
    return "null"
  end
  return string.format("%d", v)
end

function M.done(summary, latency, requests)
  local e = summary.errors
  local pcts = {}
  for _, p in ipairs({ 50, 75, 90, 99, 99.9 }) do
    pcts[#pcts + 1] = string.format('"p%s":%d', tostring(p), latency:percentile(p))
  end
  local threads = {}
  for _, t in ipairs(M.threads) do
    threads[#threads + 1] = string.format(
      '{"codes":%s,"applied":%s,"unmatched":%s,"starved":%s,"schedules":%s}',
      counts(t:get("codes")),
      number(t:get("applied")),
      number(t:get("unmatched")),
      number(t:get("starved")),
      number(t:get("owned"))
    )
  end
  io.write(
    string.format(
      'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,'
        .. '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},'
        .. '"latency_us":{"min":%d,"mean":%.1f,"stdev":%.1f,"max":%d,%s},"threads":[%s]}\n',
      summary.requests,
      summary.duration,
      summary.bytes,
      e.connect,
      e.read,
      e.write,
      e.status,
      e.timeout,
      latency.min,
      latency.mean,
      latency.stdev,
      latency.max,
      table.concat(pcts, ","),
      table.concat(threads, ",")
    )
  )
end

return M
