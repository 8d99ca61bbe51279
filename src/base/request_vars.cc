#include "turnpike/request_vars.h"

#include <array>

namespace turnpike {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(BuiltinVar::kCount)> kBuiltinNames = {
    "remote_addr",  "remote_port", "realip_remote_addr", "server_addr", "server_port",
    "scheme",       "host",        "uri",                "request_uri", "real_request_uri",
    "args",         "query_string", "is_args",           "request_method", "request_length",
    "route_id",     "route_name",  "service_id",         "service_name", "upstream_uri",
    "status",
    "content_type", "content_length", "server_protocol", "server_name", "hostname",
    "request", "document_uri", "request_time", "msec", "time_iso8601", "time_local",
    "connection", "connection_requests", "request_id", "pid", "bytes_sent",
    "body_bytes_sent", "upstream_scheme", "upstream_host", "upstream_addr",
    "upstream_status", "upstream_connect_time", "upstream_header_time",
    "upstream_response_time", "balancer_ip", "balancer_port", "request_body",
    "remote_user",
};

// Every builtin has a name (a missing one would leave an empty string at the end).
static_assert(!kBuiltinNames.back().empty(), "kBuiltinNames is out of step with BuiltinVar");

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() > prefix.size() && s.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string_view BuiltinVarName(BuiltinVar v) {
  auto i = static_cast<size_t>(v);
  return i < kBuiltinNames.size() ? kBuiltinNames[i] : std::string_view("?");
}

StatusOr<VarRef> CompileVar(std::string_view name) {
  VarRef ref;
  ref.source = std::string(name);
  for (size_t i = 0; i < kBuiltinNames.size(); ++i) {
    if (kBuiltinNames[i] == name) {
      ref.kind = VarRef::Kind::kBuiltin;
      ref.builtin = static_cast<BuiltinVar>(i);
      return ref;
    }
  }
  struct Family {
    std::string_view prefix;
    VarRef::Kind kind;
  };
  static constexpr Family kFamilies[] = {
      {"http_", VarRef::Kind::kHeader},     {"arg_", VarRef::Kind::kArg},
      {"cookie_", VarRef::Kind::kCookie},   {"post_arg_", VarRef::Kind::kPostArg},
      {"uri_param_", VarRef::Kind::kUriParam},
  };
  for (const Family& f : kFamilies) {
    if (!StartsWith(name, f.prefix)) continue;
    ref.kind = f.kind;
    ref.name = std::string(name.substr(f.prefix.size()));
    if (f.kind == VarRef::Kind::kHeader) {
      for (char& c : ref.name) {
        if (c == '_') c = '-';
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
      }
    }
    return ref;
  }
  return Status::Error("unknown variable '" + std::string(name) + "'");
}

}  // namespace turnpike
