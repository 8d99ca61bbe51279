-- The training load of scripts/build-pgo (bench/pgo_train.sh): a mix of request shapes over
-- the training routes, so that the profile weighs the paths a gateway takes in service, not
-- one benchmark's request. Per 64 requests: 24 plain GETs of /hello, 24 through the chain
-- (/chain: limit-count on X-Client with 4,096 rotating keys, proxy-rewrite, prometheus), 6
-- through /rw (response-rewrite, request-id, ip-restriction) with a query string, 4 POSTs of
-- a 1 KB body, 3 GETs with 20 headers and a long cookie and 3 route misses (404). No HEAD: wrk
-- would wait for the body its Content-Length announces.
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local rotate = require("rotate")

local body = string.rep("x", 1024)
local many = { ["Cookie"] = "session=" .. string.rep("c", 300) .. "; theme=dark" }
for h = 1, 18 do
  many["X-Extra-" .. h] = "value-" .. h
end

local function shape(k)
  local slot = k % 64
  if slot < 24 then
    return wrk.format("GET", "/hello")
  elseif slot < 48 then
    return wrk.format("GET", "/chain", { ["X-Client"] = "client-" .. k % 4096 })
  elseif slot < 54 then
    return wrk.format("GET", "/rw?page=" .. k % 97 .. "&sort=asc", { ["Accept"] = "text/plain" })
  elseif slot < 58 then
    return wrk.format("POST", "/hello", { ["Content-Type"] = "application/octet-stream" }, body)
  elseif slot < 61 then
    return wrk.format("GET", "/hello", many)
  end
  return wrk.format("GET", "/missing/" .. k % 13)
end

-- 64 shapes × 128: every key of the chain's 4,096 comes up (k % 4096 over 8,192 requests).
rotate.setup(8192, shape)
