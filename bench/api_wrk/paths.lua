-- GET every path of a file in turn (one per line), each request built once in init().
-- Each wrk thread starts at its own offset in the file and wraps around at its end.
-- Usage: wrk ... -s paths.lua URL PATHS_FILE   (headers such as Authorization from -H)
-- The responses are not read here (wrk counts statuses >= 400 as errors.status).

local here = debug.getinfo(1, "S").source:sub(2):match("^(.*/)") or "./"
local report = dofile(here .. "report.lua")

setup = report.setup
done = report.done

local built = {}
local count, cursor = 0, 0

function init(args)
  local file = args[1]
  if file == nil then
    error("paths.lua: the file of paths is missing")
  end
  for line in io.lines(file) do
    if line ~= "" then
      count = count + 1
      built[count] = wrk.format("GET", line)
    end
  end
  if count == 0 then
    error("paths.lua: no path in " .. file)
  end
  cursor = ((tid or 0) * 997) % count
end

function request()
  cursor = cursor % count + 1
  return built[cursor]
end
