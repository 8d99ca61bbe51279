#include "admin/control_api.h"

#include <vector>

namespace turnpike::admin {
namespace {

using Kind = ControlView::Kind;

HttpAnswer JsonAnswer(int status, const nlohmann::json& body) {
  return {status, "application/json",
          body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

HttpAnswer Error(int status, const std::string& message) {
  return JsonAnswer(status, nlohmann::json{{"error_msg", message}});
}

HttpAnswer NotFound() { return Error(404, "404 Not Found"); }

// core.utils.split_uri: what lies between the slashes ("/v1/route/1": "", "v1", "route", "1").
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) {
      out.push_back(path.substr(start));
      return out;
    }
    out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
}

// v1.lua's dump_*_info: the id is the fourth segment, whatever follows it.
HttpAnswer DumpOne(ControlView* view, Kind kind, std::string_view singular,
                   const std::vector<std::string_view>& segs) {
  std::string_view id = segs[3];
  std::optional<std::string> item = view != nullptr ? view->Item(kind, id) : std::nullopt;
  if (!item) return Error(404, std::string(singular) + "[" + std::string(id) + "] not found");
  return {200, "application/json", std::move(*item) + "\n"};
}

HttpAnswer DumpAll(ControlView* view, Kind kind) {
  return {200, "application/json", (view != nullptr ? view->List(kind) : "{}") + "\n"};
}

nlohmann::json CheckerInfo(const ControlView::Checked& c, const ControlHooks& hooks) {
  nlohmann::json info = {{"name", c.key}};
  nlohmann::json nodes = hooks.health_nodes ? hooks.health_nodes(c.key) : nlohmann::json();
  if (!nodes.is_null()) info["nodes"] = std::move(nodes);
  if (!c.type.empty()) info["type"] = c.type;
  return info;
}

HttpAnswer HealthCheckers(ControlView* view, const ControlHooks& hooks) {
  nlohmann::json infos = nlohmann::json::array();
  if (view != nullptr) {
    for (Kind kind : {Kind::kRoutes, Kind::kServices, Kind::kUpstreams}) {
      for (const ControlView::Checked& c : view->CheckedItems(kind)) {
        infos.push_back(CheckerInfo(c, hooks));
      }
    }
  }
  if (infos.empty()) return JsonAnswer(200, nlohmann::json::object());  // Lua's empty table
  return JsonAnswer(200, infos);
}

// v1.lua's get_health_checker: /v1/healthcheck/<src_type>/<src_id>.
HttpAnswer HealthChecker(ControlView* view, const ControlHooks& hooks,
                         const std::vector<std::string_view>& segs) {
  std::string type(segs[3]);
  if (segs.size() < 5) return Error(404, "missing src id for src type " + type);
  std::string id(segs[4]);
  Kind kind;
  if (type == "routes") {
    kind = Kind::kRoutes;
  } else if (type == "services") {
    kind = Kind::kServices;
  } else if (type == "upstreams") {
    kind = Kind::kUpstreams;
  } else {
    return Error(400, "invalid src type " + type);
  }
  if (view == nullptr || !view->Has(kind, id)) return Error(404, type + "[" + id + "] not found");
  std::optional<ControlView::Checked> checked = view->Checker(kind, id);
  if (!checked) return Error(404, "no checker for " + type + "[" + id + "]");
  return JsonAnswer(200, CheckerInfo(*checked, hooks));
}

// /v1/discovery/<name>/dump and /v1/discovery/<name>/show_dump_file, exactly.
HttpAnswer Discovery(const ControlHooks& hooks, const std::vector<std::string_view>& segs) {
  if (segs.size() != 5) return NotFound();
  std::string_view name = segs[3];
  if (segs[4] == "dump") {
    std::optional<nlohmann::json> dump =
        hooks.discovery_dump ? hooks.discovery_dump(name) : std::nullopt;
    if (!dump || dump->is_null()) return NotFound();
    return JsonAnswer(200, *dump);
  }
  if (segs[4] == "show_dump_file") {
    std::optional<HttpAnswer> answer =
        hooks.show_dump_file ? hooks.show_dump_file(name) : std::nullopt;
    if (!answer) return NotFound();
    return std::move(*answer);
  }
  return NotFound();
}

}  // namespace

HttpAnswer AnswerControlRequest(base::Method method, std::string_view path,
                                const ControlHooks& hooks) {
  std::vector<std::string_view> segs = Segments(path);
  if (segs.size() < 3 || !segs[0].empty() || segs[1] != "v1") return NotFound();
  if (method == base::Method::kPut) {
    if (path != "/v1/plugins/reload") return NotFound();
    if (!hooks.reload_plugins || !hooks.reload_plugins()) {
      return {503, "text/plain", "failed to reload"};
    }
    return {200, "text/plain", "done"};
  }
  if (method != base::Method::kGet && method != base::Method::kHead) return NotFound();
  ControlView* view = hooks.view ? hooks.view() : nullptr;
  std::string_view what = segs[2];
  bool bare = segs.size() == 3;  // "/v1/routes", not "/v1/routes/x"
  if (bare && what == "routes") return DumpAll(view, Kind::kRoutes);
  if (bare && what == "services") return DumpAll(view, Kind::kServices);
  if (bare && what == "upstreams") return DumpAll(view, Kind::kUpstreams);
  if (!bare && what == "route") return DumpOne(view, Kind::kRoutes, "route", segs);
  if (!bare && what == "service") return DumpOne(view, Kind::kServices, "service", segs);
  if (!bare && what == "upstream") return DumpOne(view, Kind::kUpstreams, "upstream", segs);
  if (what == "healthcheck") {
    return bare ? HealthCheckers(view, hooks) : HealthChecker(view, hooks, segs);
  }
  if (what == "discovery") return Discovery(hooks, segs);
  return NotFound();
}

}  // namespace turnpike::admin
