-- 4,096 rate-limit keys in rotation: X-Client: client-0 ... client-4095 (APISIX PR #14141,
-- rotating case; larger than the LRU caches whose eviction made APISIX slower).
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local rotate = require("rotate")
rotate.setup(4096, rotate.client)
