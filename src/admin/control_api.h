// The control API (`apisix.enable_control`, reference §1.5): what APISIX's
// apisix/control/v1.lua and its discovery modules answer under /v1/.
//
//   GET /v1/routes, /v1/services, /v1/upstreams
//       every item (ControlView::List): a JSON array, `{}` when there is none
//   GET /v1/route/{id}, /v1/service/{id}, /v1/upstream/{id}
//       one item; 404 {"error_msg":"route[<id>] not found"} (service[..], upstream[..])
//   GET /v1/healthcheck
//       [{"name": "/upstreams/1", "type": "http", "nodes": [...]}, ...] for every route,
//       service and upstream with `checks` (routes, then services, then upstreams), `{}`
//       when there is none. `nodes` is the checker's report (ControlHooks::health_nodes),
//       absent while no checker runs for the item (APISIX starts one on first use)
//   GET /v1/healthcheck/{routes|services|upstreams}/{id}
//       one such object; 404 "<type>[<id>] not found" or "no checker for <type>[<id>]",
//       400 "invalid src type <type>", 404 "missing src id for src type <type>"
//   GET /v1/discovery/{name}/dump
//       the provider's Dump() when it is configured and has one, else 404
//   GET /v1/discovery/{name}/show_dump_file
//       what ControlHooks::show_dump_file answers (consul's dump file), else 404
//   PUT /v1/plugins/reload
//       ControlHooks::reload_plugins: 200 `done` (text), 503 when it cannot
// Anything else (another path or method) is 404 {"error_msg":"404 Not Found"}, Turnpike's
// stand-in for nginx's page. HEAD is answered as GET, without the body. JSON bodies end with
// "\n" (APISIX's convention). Not served: /v1/schema, /v1/gc, /v1/plugin_metadata(s), and the
// HTML table /v1/healthcheck renders for `Accept: text/html`.
//
// Pure routing over the hooks, no I/O of its own: the listener (daemon/control_api_service.h)
// runs it on the control thread, where the view and the hooks live.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "admin/control_view.h"
#include "admin/status_api.h"
#include "base/http_method.h"

namespace turnpike::admin {

// What the control API asks the daemon. A hook may be empty: then there is nothing to show
// (404, `{}`, no `nodes`), or no reload (503).
struct ControlHooks {
  // The view of the config in service; null before the first load.
  std::function<ControlView*()> view;
  // Provider `name`'s dump: nullopt when no such provider runs, null JSON when it has
  // nothing to show (both 404).
  std::function<std::optional<nlohmann::json>(std::string_view name)> discovery_dump;
  // /v1/discovery/<name>/show_dump_file; nullopt: no such endpoint for `name` (404).
  std::function<std::optional<HttpAnswer>(std::string_view name)> show_dump_file;
  // The health checker's targets of an item ("/upstreams/1", "/routes/1", ...), as APISIX's
  // get_target_list: [{"ip", "port", "hostname", "status", "counter": {"success",
  // "http_failure", "tcp_failure", "timeout_failure"}}, ...]; null when no checker runs for it.
  std::function<nlohmann::json(std::string_view key)> health_nodes;
  // PUT /v1/plugins/reload: starts a reload; false when it cannot (503).
  std::function<bool()> reload_plugins;
};

// `path` without the query string.
HttpAnswer AnswerControlRequest(base::Method method, std::string_view path,
                                const ControlHooks& hooks);

}  // namespace turnpike::admin
