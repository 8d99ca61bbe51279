#include "plugins/file_logger/config.h"

#include "plugins/common/schema.h"

namespace turnpike::plugins::file_logger {
namespace {

constexpr int kMaxFormatDepth = 5;  // log-util's MAX_LOG_FORMAT_DEPTH

// `v` as JSON text. Strings from YAML may hold invalid UTF-8, on which dump() throws; those
// bytes are written as U+FFFD.
std::string JsonText(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<FormatField> CompileFormat(const nlohmann::json& format, int depth) {
  std::vector<FormatField> fields;
  for (auto it = format.begin(); it != format.end(); ++it) {
    FormatField f;
    f.key = it.key();
    f.key_json = JsonText(nlohmann::json(it.key()));
    const nlohmann::json& v = *it;
    if (v.is_object()) {
      f.kind = FormatField::Kind::kObject;
      // Deeper than APISIX's limit: the object is kept, empty (log-util truncates it).
      if (depth < kMaxFormatDepth) f.children = CompileFormat(v, depth + 1);
    } else if (v.is_string() && !v.get_ref<const std::string&>().empty() &&
               v.get_ref<const std::string&>()[0] == '$') {
      std::string name = v.get<std::string>().substr(1);
      if (name == "request_body") {
        f.kind = FormatField::Kind::kRequestBody;
      } else if (StatusOr<VarRef> ref = CompileVar(name); ref.ok()) {
        f.kind = FormatField::Kind::kVar;
        f.var = std::move(ref).value();
      } else {
        f.kind = FormatField::Kind::kUnknownVar;  // ctx.var[name] is nil in APISIX too
      }
    } else {
      f.kind = FormatField::Kind::kLiteral;
      f.literal = JsonText(v);
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

// An array of arrays with at least one item (the *_expr properties), compiled.
Status CompileExpr(const nlohmann::json& conf, const char* name, ExpressionConstPtr* out) {
  auto it = conf.find(name);
  if (it == conf.end()) return Status::Ok();
  if (!it->is_array()) return schema::Property(name, schema::WrongType("array", *it));
  if (it->empty()) {
    return schema::Property(name, "expect array to have at least 1 items");
  }
  for (const nlohmann::json& item : *it) {
    if (!item.is_array()) return schema::Property(name, schema::WrongType("array", item));
  }
  StatusOr<ExpressionConstPtr> e = Expression::Compile(*it);
  if (!e.ok()) {
    return Status::Error("failed to validate the '" + std::string(name) +
                         "' expression: " + e.status().message());
  }
  *out = std::move(e).value();
  return Status::Ok();
}

Status ReadSize(const nlohmann::json& conf, const char* name, uint64_t* out) {
  auto it = conf.find(name);
  if (it == conf.end()) return Status::Ok();
  if (std::string err = schema::CheckInteger(*it, 1, INT64_MAX); !err.empty()) {
    return schema::Property(name, err);
  }
  *out = static_cast<uint64_t>(it->get<double>());
  return Status::Ok();
}

}  // namespace

EntryVars::EntryVars() {
  auto v = [](std::string_view name) { return CompileVar(name).value(); };
  scheme = v("scheme");
  host = v("host");
  server_port = v("server_port");
  request_uri = v("request_uri");
  request_method = v("request_method");
  args = v("args");
  request_length = v("request_length");
  bytes_sent = v("bytes_sent");
  upstream_addr = v("upstream_addr");
  route_id = v("route_id");
  service_id = v("service_id");
  remote_addr = v("remote_addr");
  hostname = v("hostname");
}

StatusOr<Config> ParseConfig(const nlohmann::json& conf) {
  if (!conf.is_object()) {
    return Status::Error(schema::WrongType("object", conf));
  }
  Config c;
  // check_schema compiles `match` before the schema check, so its errors come first.
  if (auto it = conf.find("match"); it != conf.end()) {
    if (!it->is_array()) return schema::Property("match", schema::WrongType("array", *it));
    if (it->size() > 20) {
      return schema::Property("match", "expect array to have at most 20 items");
    }
    for (const nlohmann::json& item : *it) {
      if (!item.is_array()) return schema::Property("match", schema::WrongType("array", item));
      StatusOr<ExpressionConstPtr> e = Expression::Compile(item);
      if (!e.ok()) {
        return Status::Error("failed to validate the 'match' expression: " + e.status().message());
      }
      c.match.push_back(std::move(e).value());
    }
  }
  auto path = conf.find("path");
  if (path == conf.end()) {
    // Turnpike has no plugin metadata, so the path can only come from here.
    return Status::Error("property \"path\" is required");
  }
  if (!path->is_string()) return schema::Property("path", schema::WrongType("string", *path));
  c.path = path->get<std::string>();
  for (const char* name : {"log_format", "log_format_extra"}) {
    auto it = conf.find(name);
    if (it == conf.end()) continue;
    if (!it->is_object()) return schema::Property(name, schema::WrongType("object", *it));
    if (std::string_view(name) == "log_format") {
      c.log_format = CompileFormat(*it, 1);
    } else {
      c.log_format_extra = CompileFormat(*it, 1);
    }
  }
  if (Status s = schema::ReadBool(conf, "include_req_body", &c.include_req_body); !s.ok()) return s;
  if (Status s = schema::ReadBool(conf, "include_resp_body", &c.include_resp_body); !s.ok())
    return s;
  if (Status s = CompileExpr(conf, "include_req_body_expr", &c.include_req_body_expr); !s.ok()) {
    return s;
  }
  if (Status s = CompileExpr(conf, "include_resp_body_expr", &c.include_resp_body_expr); !s.ok()) {
    return s;
  }
  if (Status s = ReadSize(conf, "max_req_body_bytes", &c.max_req_body_bytes); !s.ok()) return s;
  if (Status s = ReadSize(conf, "max_resp_body_bytes", &c.max_resp_body_bytes); !s.ok()) {
    return s;
  }
  return c;
}

}  // namespace turnpike::plugins::file_logger
