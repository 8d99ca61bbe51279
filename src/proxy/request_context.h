// RequestContext: the request variables (`ctx.var`, reference §7) of the request in progress
// on one client connection, over the parsed head — nothing is copied or parsed up front, and
// a lookup scans only what it needs (one header, the query string, the Cookie header).
//
// Owned by a ClientConnection; worker thread only. Views returned by Get() stay valid until
// the exchange ends.
#pragma once

#include <string>
#include <string_view>

#include "http/message.h"
#include "turnpike/request_vars.h"

namespace turnpike::proxy {

struct Route;

// The connection-level facts, fixed at accept.
struct ConnectionInfo {
  std::string_view peer_ip;
  std::string_view peer_port;
  std::string_view local_ip;
  std::string_view local_port;
};

// Path parameters captured by the router (names view the route table, values the path).
struct CapturedParams {
  static constexpr size_t kMax = 8;
  std::string_view names[kMax];
  std::string_view values[kMax];
  uint8_t count = 0;
};

class RequestContext final : public RequestVars {
 public:
  // Starts a request. `uri` is the normalized path, `host` the lowercased host without port,
  // `remote_addr` the client address after real-IP processing. All must outlive the request.
  void Begin(const ConnectionInfo* conn, const http::RequestHead* req, std::string_view uri,
             std::string_view host, std::string_view remote_addr);
  void SetRoute(const Route* route) { route_ = route; }
  void SetStatus(int status) { status_ = status; }
  CapturedParams& params() { return params_; }

  std::optional<std::string_view> Get(const VarRef& var) override;

  // Helpers shared with the proxy (also used for X-Forwarded-* and real IP).
  std::optional<std::string_view> Header(std::string_view lower_name) const;
  static std::optional<std::string_view> QueryArg(std::string_view query, std::string_view name);
  static std::optional<std::string_view> CookieValue(std::string_view cookies,
                                                     std::string_view name);

 private:
  std::optional<std::string_view> Builtin(BuiltinVar v);

  const ConnectionInfo* conn_ = nullptr;
  const http::RequestHead* req_ = nullptr;
  const Route* route_ = nullptr;
  std::string_view uri_;
  std::string_view host_;
  std::string_view remote_addr_;
  int status_ = 0;
  CapturedParams params_;
  std::string request_uri_;  // "$uri?$args", built on first use (capacity reused)
  bool request_uri_built_ = false;
  char status_text_[8] = {};
};

}  // namespace turnpike::proxy
