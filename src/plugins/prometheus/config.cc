#include "plugins/prometheus/config.h"

#include <cmath>
#include <limits>

#include "plugins/common/schema.h"

namespace turnpike::plugins::prometheus {
namespace {

Status AttrError(std::string_view property, std::string_view inner) {
  return Status::Error("plugin_attr.prometheus: " + schema::PropertyText(property, inner));
}

Status ParseExtraLabels(std::string_view metric, const nlohmann::json& v, MetricAttr* out) {
  std::string field = "metrics." + std::string(metric) + ".extra_labels";
  if (!v.is_array()) return AttrError(field, schema::WrongType("array", v));
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& item = v[i];
    std::string prefix = "failed to validate item " + std::to_string(i + 1) + ": ";
    if (!item.is_object() || item.size() != 1) {
      return AttrError(field, prefix + "expected an object with one label");
    }
    ExtraLabel label;
    label.name = item.begin().key();
    const nlohmann::json& value = item.begin().value();
    if (!value.is_string()) return AttrError(field, prefix + schema::WrongType("string", value));
    const std::string& text = value.get_ref<const std::string&>();
    if (!text.empty() && text[0] == '$') {
      StatusOr<VarRef> var = CompileVar(std::string_view(text).substr(1));
      if (!var.ok()) return AttrError(field, prefix + var.status().message());
      label.is_var = true;
      label.var = std::move(var).value();
    } else {
      label.value = text;  // a constant: resolved once, like the route's own labels
    }
    out->extra_labels.push_back(std::move(label));
  }
  return Status::Ok();
}

}  // namespace

namespace {
constexpr std::string_view kStatusLabels[] = {
    "code", "route",        "matched_uri",       "matched_host", "service",        "consumer",
    "node", "request_type", "request_llm_model", "llm_model",    "response_source"};
constexpr std::string_view kLatencyLabels[] = {
    "type", "route",        "service",           "consumer",
    "node", "request_type", "request_llm_model", "llm_model"};
}  // namespace

std::span<const std::string_view> BuiltinLabels(Metric m) {
  if (m == kHttpStatus) return kStatusLabels;
  return kLatencyLabels;  // http_latency and bandwidth share their labels
}

StatusOr<Attr> ParseAttr(const nlohmann::json& attr) {
  Attr a;
  if (attr.is_null()) return a;
  if (!attr.is_object())
    return Status::Error("plugin_attr.prometheus: " + schema::WrongType("object", attr));
  if (auto it = attr.find("export_uri"); it != attr.end()) {
    if (std::string e = schema::CheckString(*it, 1); !e.empty()) return AttrError("export_uri", e);
    a.export_uri = it->get<std::string>();
    if (a.export_uri[0] != '/') return AttrError("export_uri", "must start with \"/\"");
  }
  if (auto it = attr.find("export_addr"); it != attr.end()) {
    if (!it->is_object()) return AttrError("export_addr", schema::WrongType("object", *it));
    if (auto ip = it->find("ip"); ip != it->end()) {
      if (std::string e = schema::CheckString(*ip, 1); !e.empty()) {
        return AttrError("export_addr", schema::PropertyText("ip", e));
      }
      a.export_ip = ip->get<std::string>();
    }
    if (auto port = it->find("port"); port != it->end()) {
      if (std::string e = schema::CheckInteger(*port, 1, 65535); !e.empty()) {
        return AttrError("export_addr", schema::PropertyText("port", e));
      }
      a.export_port = static_cast<int>(port->get<double>());
    }
  }
  if (auto it = attr.find("enable_export_server"); it != attr.end()) {
    if (std::string e = schema::CheckBoolean(*it); !e.empty()) {
      return AttrError("enable_export_server", e);
    }
    a.enable_export_server = it->get<bool>();
  }
  if (auto it = attr.find("metric_prefix"); it != attr.end()) {
    if (std::string e = schema::CheckString(*it, 1); !e.empty()) {
      return AttrError("metric_prefix", e);
    }
    a.metric_prefix = it->get<std::string>();
  }
  if (auto it = attr.find("default_buckets"); it != attr.end()) {
    if (!it->is_array()) return AttrError("default_buckets", schema::WrongType("array", *it));
    if (it->empty()) return AttrError("default_buckets", "expect array to have at least 1 items");
    a.default_buckets.clear();
    for (const nlohmann::json& b : *it) {
      if (!b.is_number()) return AttrError("default_buckets", schema::WrongType("number", b));
      double v = b.get<double>();
      if (!std::isfinite(v) || (!a.default_buckets.empty() && v <= a.default_buckets.back())) {
        return AttrError("default_buckets", "buckets must be finite and increasing");
      }
      a.default_buckets.push_back(v);
    }
  }
  if (auto it = attr.find("metrics"); it != attr.end()) {
    if (!it->is_object()) return AttrError("metrics", schema::WrongType("object", *it));
    for (const auto& [name, m] : it->items()) {
      int index = -1;
      for (size_t i = 0; i < kMetricCount; ++i) {
        if (name == kMetricNames[i]) index = static_cast<int>(i);
      }
      // Other metric names (APISIX's llm or stream ones) have nothing to configure here.
      if (index < 0) continue;
      if (!m.is_object()) return AttrError("metrics." + name, schema::WrongType("object", m));
      MetricAttr& out = a.metrics[static_cast<size_t>(index)];
      if (auto extra = m.find("extra_labels"); extra != m.end()) {
        Status s = ParseExtraLabels(name, *extra, &out);
        if (!s.ok()) return s;
        for (const ExtraLabel& l : out.extra_labels) {
          for (std::string_view builtin : BuiltinLabels(static_cast<Metric>(index))) {
            if (l.name == builtin) {
              return AttrError("metrics." + name + ".extra_labels",
                               "label \"" + l.name + "\" is a built-in label");
            }
          }
        }
      }
      if (auto expire = m.find("expire"); expire != m.end()) {
        if (std::string e = schema::CheckInteger(*expire, 0, std::numeric_limits<int32_t>::max());
            !e.empty()) {
          return AttrError("metrics." + name + ".expire", e);
        }
        out.expire = static_cast<int64_t>(expire->get<double>());
      }
    }
  }
  if (auto it = attr.find("max_series"); it != attr.end()) {
    if (std::string e = schema::CheckInteger(*it, 1, std::numeric_limits<int32_t>::max());
        !e.empty()) {
      return AttrError("max_series", e);
    }
    a.max_series = static_cast<size_t>(it->get<double>());
  }
  return a;
}

StatusOr<Config> ParseConfig(const nlohmann::json& conf, const nlohmann::json& metadata) {
  if (!conf.is_object()) return Status::Error(schema::WrongType("object", conf));
  Config c;
  if (auto it = conf.find("prefer_name"); it != conf.end()) {
    if (std::string e = schema::CheckBoolean(*it); !e.empty()) {
      return schema::Property("prefer_name", e);
    }
    c.prefer_name = it->get<bool>();
  }
  for (size_t m = 0; m < kMetricCount; ++m) {
    c.disabled[m].assign(BuiltinLabels(static_cast<Metric>(m)).size(), false);
  }
  auto it = metadata.is_object() ? metadata.find("disabled_labels") : metadata.end();
  if (metadata.is_object() && it != metadata.end()) {
    if (!it->is_object()) {
      return Status::Error(
          "plugin_metadata: " +
          schema::PropertyText("disabled_labels", schema::WrongType("object", *it)));
    }
    for (const auto& [name, labels] : it->items()) {
      std::string field = "disabled_labels." + name;
      int index = -1;
      for (size_t i = 0; i < kMetricCount; ++i) {
        if (name == kMetricNames[i]) index = static_cast<int>(i);
      }
      if (index < 0) {
        return Status::Error(
            "plugin_metadata: " +
            schema::PropertyText("disabled_labels",
                                 "additional properties forbidden, found " + name));
      }
      if (!labels.is_array()) {
        return Status::Error("plugin_metadata: " +
                             schema::PropertyText(field, schema::WrongType("array", labels)));
      }
      std::span<const std::string_view> names = BuiltinLabels(static_cast<Metric>(index));
      for (const nlohmann::json& l : labels) {
        if (!l.is_string()) {
          return Status::Error("plugin_metadata: " +
                               schema::PropertyText(field, schema::WrongType("string", l)));
        }
        const std::string& label = l.get_ref<const std::string&>();
        size_t i = 0;
        while (i < names.size() && names[i] != label) ++i;
        // The first label (code / type) tells the series of one request apart: structural.
        if (i == names.size() || i == 0) {
          return Status::Error(
              "plugin_metadata: " +
              schema::PropertyText(field, "label \"" + label + "\" cannot be disabled"));
        }
        c.disabled[static_cast<size_t>(index)][i] = true;
      }
    }
  }
  return c;
}

}  // namespace turnpike::plugins::prometheus
