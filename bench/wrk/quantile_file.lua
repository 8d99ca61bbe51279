-- bench/wrk/quantile_file.lua: writes a wrk run's latency quantiles to the file named by
-- $WRK_QUANTILES (nothing when it is unset or empty), finely enough that runs can be merged and
-- a percentile taken over all of their requests (bench/lib/loadtest.sh merge_quantiles,
-- pooled_quantile_ratio), which wrk's own percentiles, one run at a time, cannot give. Called from
-- the done() hook of bench/wrk/quantiles.lua (a plain run) and bench/wrk/paced.lua.
--
-- Lines: "requests N", then "P US": P% of the run's requests took at most US microseconds, P in
-- steps of 0.5 up to 90, of 0.01 from 90 to 99.99, of 0.001 above, and 100 (the slowest).
-- (wrk 4.1's Lua sees its latency histogram only through percentile(), min, max, mean, stdev.)
local M = {}

function M.write(summary, latency)
  local path = os.getenv("WRK_QUANTILES")
  if path == nil or path == "" then return end
  local f = assert(io.open(path, "w"))
  f:write(string.format("requests %d\n", summary.requests))
  local function put(p) f:write(string.format("%.3f %d\n", p, latency:percentile(p))) end
  for i = 1, 179 do put(i * 0.5) end
  for i = 9001, 9999 do put(i / 100) end
  for i = 99991, 99999 do put(i / 1000) end
  f:write(string.format("100 %d\n", latency.max))
  f:close()
end

return M
