-- Paced load over many routes: GET /r/0 ... /r/<routes-1> in turn, each connection waiting
-- delay_ms after every answer (wrk's delay hook), so the rate is about
-- connections * 1000 / (delay_ms + latency) and stays put while latency is small.
-- Usage: wrk ... -s bench/wrk/paced.lua URL -- <routes> <delay_ms>
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local delay_ms = 10
local quantile_file = require("quantile_file")

require("rotate").setup(function(args)
  delay_ms = tonumber(args[2] or "10")
  return tonumber(args[1] or "1")
end, function(r)
  return wrk.format("GET", "/r/" .. r)
end)

function delay()
  return delay_ms
end

-- wrk --latency prints p50/p75/p90/p99; the tail beyond them, in microseconds, and with
-- $WRK_QUANTILES set, the run's quantiles in that file (bench/wrk/quantile_file.lua).
function done(summary, latency, requests)
  for _, p in ipairs({ 99.9, 99.99 }) do
    io.write(string.format("tail %g%% %d\n", p, latency:percentile(p)))
  end
  quantile_file.write(summary, latency)
end
