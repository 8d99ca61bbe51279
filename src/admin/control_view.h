// ControlView: the routes, services and upstreams of one loaded config as APISIX's control API
// shows them (`/v1/routes`, `/v1/route/{id}`, `/v1/services`, ...; apisix/control/v1.lua).
//
// APISIX answers with its in-memory config items. For a standalone file:
//   {"key": "/routes/1", "modifiedIndex": <file mtime>, "value": {<the item as written, with
//    the schema's defaults filled in and `id` a string>}, ...}
// plus what its filters add: `orig_modifiedIndex` (routes), `has_domain` (a node is a host
// name), hosts lowercased, an empty `_meta` in every plugin conf, and on every upstream
// (standalone or inline) `nodes` as a list of {host, port, weight} (map form converted),
// `resource_key` / `resource_version` / `resource_id` of the item holding it and, with host
// names, `dns_nodes`. The view does the same from each item's source (config::RouteSpec::
// source, kept when the routes file is parsed with RoutesParseOptions::keep_source), with the
// defaults of APISIX's route and upstream schemas (health checks included); a plugin's own
// schema defaults are not filled in (its conf shows as written). Items the snapshot build
// skipped (BuildReport::skipped) are left out, as APISIX leaves out items failing its checks;
// disabled routes (`status: 0`) are in, as in APISIX.
//
// Cost: Build() moves each item's source text and indexes ids (no JSON parsing), so a reload
// pays next to nothing for it; an item is parsed and rendered when asked for (microseconds),
// and a whole list once per config version (then kept).
//
// Thread rules: built on the reload job's thread, then used by the control thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/specs.h"

namespace turnpike::admin {

class ControlView {
 public:
  enum class Kind { kRoutes, kServices, kUpstreams };

  // An item with health checks (its `checks`, or its inline upstream's).
  struct Checked {
    std::string key;  // APISIX's resource key, e.g. "/upstreams/1"
    std::string id;
    std::string type;  // checks.active.type, else checks.passive.type ("http" by default)
  };

  // Takes the items' sources out of `routes` (moved). `skipped`: "routes/<id>",
  // "services/<id>", "upstreams/<id>" to leave out. `modified_index`: APISIX's modifiedIndex
  // of a file's items, the file's mtime in seconds.
  static std::unique_ptr<ControlView> Build(config::RoutesConfig& routes,
                                            const std::vector<std::string>& skipped,
                                            int64_t modified_index);

  // One item's JSON (no trailing newline), or nullopt when there is no such id.
  std::optional<std::string> Item(Kind kind, std::string_view id) const;
  // Every item of `kind` in file order, as a JSON array; `{}` when there is none (APISIX's
  // JSON encoder writes an empty table as an object). Rendered once, then kept.
  const std::string& List(Kind kind);
  // Whether item `id` of `kind` exists.
  bool Has(Kind kind, std::string_view id) const;
  // The items of `kind` with health checks, in file order.
  std::vector<Checked> CheckedItems(Kind kind) const;
  // Item `id` when it has health checks; nullopt otherwise (or when it does not exist).
  std::optional<Checked> Checker(Kind kind, std::string_view id) const;

  size_t size(Kind kind) const { return items_[Index(kind)].items.size(); }
  int64_t modified_index() const { return modified_index_; }

  // "routes", "services", "upstreams".
  static std::string_view Name(Kind kind);

 private:
  struct Entry {
    std::string id;
    std::string source;  // compact JSON text of the item as written
  };
  struct Items {
    std::vector<Entry> items;
    std::unordered_map<std::string_view, size_t> by_id;  // views into items[].id
    std::optional<std::string> list;                     // List(), once rendered
  };
  static size_t Index(Kind kind) { return static_cast<size_t>(kind); }
  const Entry* Find(Kind kind, std::string_view id) const;
  std::optional<Checked> CheckerOf(Kind kind, const Entry& entry) const;

  Items items_[3];
  int64_t modified_index_ = 0;
};

// One item as APISIX shows it (see above); for the view and its tests. `source` is the item's
// JSON text; anything but an object counts as an empty one.
std::string RenderControlItem(ControlView::Kind kind, std::string_view id, std::string_view source,
                              int64_t modified_index);

}  // namespace turnpike::admin
