-- bench/wrk/quantiles.lua: a plain wrk run (GET of the URL) that, at its end, writes its latency
-- quantiles to the file named by $WRK_QUANTILES (bench/wrk/quantile_file.lua says how).
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local quantile_file = require("quantile_file")

function done(summary, latency, requests)
  quantile_file.write(summary, latency)
end
