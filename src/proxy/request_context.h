// RequestContext: the request variables (`ctx.var`, reference §7) of the request in progress
// on one client connection, over the parsed head — nothing is copied or parsed up front, and
// a lookup scans only what it needs (one header, the query string, the Cookie header).
//
// Owned by the Exchange of the request; worker thread only. Views returned by Get() stay valid
// until the exchange ends.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/form_args.h"
#include "http/header_edits.h"
#include "http/message.h"
#include "proxy/pause_table.h"
#include "proxy/request_facts.h"
#include "router/path_params.h"
#include "router/route_table.h"
#include "turnpike/plugin.h"
#include "turnpike/request_state.h"
#include "turnpike/request_vars.h"

namespace turnpike::proxy {

class PhaseRunner;
struct Route;

// The connection-level facts, fixed at accept.
struct ConnectionInfo {
  std::string_view peer_ip;
  std::string_view peer_port;
  std::string_view local_ip;
  std::string_view local_port;
};

// Path parameters captured by the router (names view the route table, values the path).
using CapturedParams = router::PathParams;

class RequestContext final : public PluginContext {
 public:
  // Starts a request. `uri` is the normalized path, `host` the lowercased host without port,
  // `remote_addr` the client address after real-IP processing. All must outlive the request.
  void Begin(const ConnectionInfo* conn, const http::RequestHead* req, std::string_view uri,
             std::string_view host, std::string_view remote_addr);
  // `match`: which of the route's patterns matched (the exchange's; outlives the request).
  void SetRoute(const Route* route, const router::MatchInfo* match = nullptr) {
    route_ = route;
    match_ = match;
  }
  // The response head the client gets came from a node (response_from_upstream()).
  void SetResponseFromUpstream(bool from_upstream) { from_upstream_ = from_upstream; }
  // Where Pause() registers the request (the worker's table) and what resumes (the exchange).
  void SetPauseTarget(PauseTable* table, Pausable* owner) {
    pause_table_ = table;
    pause_owner_ = owner;
  }
  // What runs the request's phases: it knows the running hook's worker-state slot. Set once
  // (the exchange owns both).
  void SetPhaseRunner(const PhaseRunner* runner) { runner_ = runner; }
  // The request ended: its plugins' request states are reset (kept for the next request;
  // turnpike/request_state.h). Idempotent; Begin() does it too when it was not done.
  void EndRequest() { states_.EndRequest(); }
  // The handle of the latest Pause() of this request (stale once resumed or cancelled).
  const PausedRequest& pause_handle() const { return pause_; }
  void SetStatus(int status) { status_ = status; }
  CapturedParams& params() { return params_; }

  std::optional<std::string_view> Get(const VarRef& var) override;

  // ---- PluginContext ----
  void Respond(int status, std::string_view body) override;
  PausedRequest Pause() override;
  void SetRequestHeader(std::string_view name, std::string_view value) override {
    request_edits_.Set(name, value);
  }
  void RemoveRequestHeader(std::string_view name) override { request_edits_.Remove(name); }
  void AddRequestHeader(std::string_view name, std::string_view value) override {
    request_edits_.Add(name, value);
  }
  void SetUri(std::string_view uri) override;
  void SetUpstreamUri(std::string_view uri) override;
  void SetUpstreamMethod(std::string_view method) override;
  void SetUpstreamHost(std::string_view host) override;
  int response_status() const override { return status_; }
  void SetResponseHeader(std::string_view name, std::string_view value) override {
    response_edits_.Set(name, value);
  }
  void RemoveResponseHeader(std::string_view name) override { response_edits_.Remove(name); }
  void MarkBodyModified() override;
  void SetResponseStatus(int status) override { status_ = status; }
  void AddResponseHeader(std::string_view name, std::string_view value) override {
    response_edits_.Add(name, value);
  }
  std::optional<std::string_view> ResponseHeader(std::string_view name) override;
  void* FindRequestState(const void* key, const RequestStateType& type) override {
    return states_.Find(key, type);
  }
  WorkerState* FindWorkerState(const Plugin& plugin) override;
  void VisitRequestHeaders(HeaderVisitor& visitor) const override;
  void VisitResponseHeaders(HeaderVisitor& visitor) const override {
    facts_.VisitResponseHeaders(visitor);
  }
  RequestTiming timing() const override { return facts_.timing(); }
  RequestSizes sizes() const override { return facts_.sizes(); }
  MatchedRoute matched_route() const override;
  bool response_from_upstream() const override { return from_upstream_; }

  // Timings, upstream attempts and what was sent: the proxy reports them here as the request
  // goes (RequestFacts::Begin right after Begin above).
  RequestFacts& facts() { return facts_; }

  // The node's response headers, for ResponseHeader() (null for Turnpike's own answers).
  // Must outlive the header_filter phase.
  void SetUpstreamResponseHeaders(const std::vector<http::Header>* headers) {
    upstream_response_headers_ = headers;
  }

  // The whole request body, when the proxy read it before routing (a form body while the
  // snapshot needs post_arg_*); empty optional when the body streams through unread. Must
  // outlive the request. post_arg_* lookups parse it on first use.
  void SetBufferedBody(std::string_view body) { buffered_body_ = body; }
  std::optional<std::string_view> buffered_body() const { return buffered_body_; }

  // What the plugins asked for (read by the proxy).
  bool responded() const { return responded_; }
  int respond_status() const { return respond_status_; }
  std::string_view respond_body() const { return respond_body_; }
  const http::HeaderEdits& request_edits() const { return request_edits_; }
  const http::HeaderEdits& response_edits() const { return response_edits_; }
  bool body_modified() const { return body_modified_; }
  // What a plugin set for the request sent upstream; empty when nothing was set.
  std::string_view upstream_uri_override() const { return upstream_uri_; }
  std::string_view upstream_method_override() const { return upstream_method_; }
  std::string_view upstream_host_override() const { return upstream_host_; }
  // The method sent upstream: the override's, else the client's.
  base::Method upstream_method() const;

  // Helpers shared with the proxy (also used for X-Forwarded-* and real IP).
  std::optional<std::string_view> Header(std::string_view lower_name) const;
  static std::optional<std::string_view> QueryArg(std::string_view query, std::string_view name);
  static std::optional<std::string_view> CookieValue(std::string_view cookies,
                                                     std::string_view name);
  // Content-Type starts with application/x-www-form-urlencoded (case-sensitive, as APISIX's
  // has_prefix): the body has post_arg_* fields.
  static bool IsFormContentType(std::string_view content_type);

 private:
  std::optional<std::string_view> Builtin(BuiltinVar v);
  std::optional<std::string_view> PostArg(std::string_view name);
  std::optional<std::string_view> RemoteUser();
  RequestFacts facts_;

  const ConnectionInfo* conn_ = nullptr;
  const http::RequestHead* req_ = nullptr;
  const Route* route_ = nullptr;
  const router::MatchInfo* match_ = nullptr;
  bool from_upstream_ = false;
  PauseTable* pause_table_ = nullptr;
  Pausable* pause_owner_ = nullptr;
  PausedRequest pause_;
  std::string_view uri_;      // $uri: the normalized path, or uri_override_ after SetUri()
  std::string uri_override_;  // SetUri()'s path (capacity reused between requests)
  std::string_view host_;
  std::string_view remote_addr_;
  int status_ = 0;
  CapturedParams params_;
  std::string request_uri_;  // "$uri?$args", built on first use (capacity reused)
  std::string remote_user_;  // decoded Basic credentials, on each $remote_user lookup
  bool request_uri_built_ = false;
  char status_text_[8] = {};
  http::HeaderEdits request_edits_;
  http::HeaderEdits response_edits_;
  bool responded_ = false;
  int respond_status_ = 0;
  std::string respond_body_;
  bool body_modified_ = false;
  // SetUpstream* values (capacity reused between requests); empty: not set.
  std::string upstream_uri_;
  std::string upstream_method_;
  std::string upstream_host_;
  base::Method upstream_method_enum_ = base::Method::kOther;
  const std::vector<http::Header>* upstream_response_headers_ = nullptr;
  std::optional<std::string_view> buffered_body_;  // see SetBufferedBody
  http::FormArgs post_args_;                       // buffered_body_'s fields, once parsed
  bool post_args_parsed_ = false;
  const PhaseRunner* runner_ = nullptr;
  RequestStateStore states_;  // the plugins' request states (RequestState<T>)
};

}  // namespace turnpike::proxy
