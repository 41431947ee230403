-- Pause/Play controls of mission schedules, each with a fresh requestID and the revision
-- the previous answer recorded: POST /api/workspaces/{id}/missions/{missionID}/schedule.
--
-- Usage: wrk ... -s control.lua URL SCHEDULES_FILE THREADS TAG
--   SCHEDULES_FILE: one schedule a line, "WORKSPACE_ID MISSION_ID REVISION STATE"
--   (STATE running or paused); thread `tid` owns lines tid, tid + THREADS, ... (0-based),
--   so no two threads ever control the same schedule.
--   TAG: makes this run's request IDs unique ("bench-TAG.tTID-INDEX-COUNTER").
--
-- Within a thread the schedules are taken round-robin, skipping any whose answer is still
-- awaited (`busy`): each schedule has at most one control in flight, and its next control
-- carries the revision of the last answer, so a conflict can only come from something
-- outside this script. A 2xx answer names its requestID (hence the schedule) and its
-- revision; the state becomes what the action asked. A non-2xx answer names no schedule:
-- that schedule stays busy (never used again in this run) and the answer is counted in
-- `codes` (by status) and `unmatched`.

local here = debug.getinfo(1, "S").source:sub(2):match("^(.*/)") or "./"
local report = dofile(here .. "report.lua")

setup = report.setup
done = report.done

-- Read by report.lua through thread:get().
codes = {}
applied = 0
unmatched = 0
starved = 0
owned = 0

local workspace, mission, revision, state, busy, asked = {}, {}, {}, {}, {}, {}
local cursor, counter = 0, 0
local prefix = ""

function init(args)
  local file, threads, tag = args[1], tonumber(args[2]), args[3]
  if file == nil or threads == nil or tag == nil then
    error("control.lua: SCHEDULES_FILE THREADS TAG expected")
  end
  prefix = "bench-" .. tag .. ".t" .. tostring(tid) .. "-"
  wrk.headers["Content-Type"] = "application/json"
  local line_no = 0
  for line in io.lines(file) do
    local w, m, r, s = line:match("^(%S+) (%S+) (%d+) (%a+)$")
    if w ~= nil then
      if line_no % threads == tid then
        owned = owned + 1
        workspace[owned], mission[owned] = w, m
        revision[owned], state[owned], busy[owned] = tonumber(r), s, false
      end
      line_no = line_no + 1
    end
  end
  if owned == 0 then
    error("control.lua: thread " .. tostring(tid) .. " owns no schedule")
  end
end

function request()
  local i = nil
  for _ = 1, owned do
    cursor = cursor % owned + 1
    if not busy[cursor] then
      i = cursor
      break
    end
  end
  if i == nil then
    -- Every owned schedule awaits an answer (more connections than schedules): send to
    -- the next one anyway; its stale revision will be refused and counted.
    starved = starved + 1
    cursor = cursor % owned + 1
    i = cursor
  end
  busy[i] = true
  counter = counter + 1
  local action = state[i] == "running" and "pause" or "play"
  asked[i] = action
  local body = string.format(
    '{"action":"%s","requestID":"%s%d-%d","expectedRevision":%d}',
    action,
    prefix,
    i,
    counter,
    revision[i]
  )
  local path = "/api/workspaces/" .. workspace[i] .. "/missions/" .. mission[i] .. "/schedule"
  return wrk.format("POST", path, nil, body)
end

function response(status, headers, body)
  codes[status] = (codes[status] or 0) + 1
  if status < 200 or status > 299 then
    unmatched = unmatched + 1
    return
  end
  local i = tonumber(body:match('"requestId":%s*"bench%-[^"]-%-(%d+)%-%d+"'))
  local r = tonumber(body:match('"revision":%s*(%d+)'))
  if i == nil or r == nil or i < 1 or i > owned then
    unmatched = unmatched + 1
    return
  end
  revision[i] = r
  state[i] = asked[i] == "pause" and "paused" or "running"
  busy[i] = false
  applied = applied + 1
end
