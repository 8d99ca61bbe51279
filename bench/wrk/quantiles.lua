-- bench/wrk/quantiles.lua: a plain wrk run that, at its end, writes its latency quantiles to the
-- file named by $WRK_QUANTILES, finely enough that runs can be merged and a percentile taken
-- over all of their requests (bench/lib/loadtest.sh merge_quantiles; bench/node_churn.sh
-- INTERLEAVE=1), which wrk's own percentiles, one run at a time, cannot give.
--
-- Lines: "requests N", then "P US": P% of the run's requests took at most US microseconds, P in
-- steps of 0.5 up to 90, of 0.01 from 90 to 99.99, of 0.001 above, and 100 (the slowest).
-- (wrk 4.1's Lua sees its latency histogram only through percentile(), min, max, mean, stdev.)
function done(summary, latency, requests)
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
