-- What the wrk scripts share, loaded by each with
--   dofile(debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") .. "threads.lua")
-- (beside the script, wherever wrk is started): the threads' numbers, a thread's share
-- of a file and the summary line.
--
-- wrk runs setup() once per thread in the main Lua state, then init() and request() in
-- each thread's own state, which sees only what setup() set on it (its `id`, 0 to
-- -t minus 1) and not how many threads there are: hence THREADS.

-- The threads made so far; done() runs in the main state and reads each one (t:get).
threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

-- The lines of `path` that fall to this thread: every THREADS-th line (wrk's -t,
-- `default_threads` when unset), starting at the thread's id.
function share_of(path, default_threads)
  local threads_n = tonumber(os.getenv("THREADS") or default_threads)
  local mine, n = {}, 0
  for line in io.lines(path) do
    if n % threads_n == id then
      mine[#mine + 1] = line
    end
    n = n + 1
  end
  return mine
end

-- Latency percentiles, requests and errors on one line; `extra` (e.g. "first joins <= 9  ")
-- stands before the errors.
function report(summary, latency, extra)
  local e = summary.errors
  io.write(string.format("p50 %.2f ms  p99 %.2f ms  requests %d  %serrors(connect/read/write/timeout/status) %d/%d/%d/%d/%d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests, extra or "",
    e.connect, e.read, e.write, e.timeout, e.status))
end
