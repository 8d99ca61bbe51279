-- One rate-limit key for every request: X-Client: client-0 (APISIX PR #14141, stable case).
package.path = debug.getinfo(1, "S").source:match("@?(.*/)") .. "?.lua;" .. package.path
local rotate = require("rotate")
rotate.setup(1, rotate.client)
