-- Shared by the scenarios in this folder: requests made once, in init, then sent in turn
-- (starting at a random one), so every scenario costs wrk the same per request and only the
-- gateway's work differs.
local M = {}

-- count: how many requests, or a function of wrk's script arguments that says it.
-- build(k): the k-th request (0-based), as wrk.format makes it.
function M.setup(count, build)
  local requests, n, i = {}, 0, 0
  function init(args)
    n = type(count) == "function" and count(args) or count
    for k = 0, n - 1 do
      requests[k] = build(k)
    end
    i = math.random(0, n - 1)
  end
  function request()
    i = (i + 1) % n
    return requests[i]
  end
end

-- GET /hello with X-Client: client-<k>, a rate-limit key.
function M.client(k)
  return wrk.format("GET", "/hello", { ["X-Client"] = "client-" .. k })
end

return M
