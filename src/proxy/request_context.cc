#include "proxy/request_context.h"

#include <charconv>

#include "base/strings.h"
#include "proxy/phase_runner.h"
#include "proxy/snapshot.h"

namespace turnpike::proxy {

MatchedRoute RequestContext::matched_route() const {
  if (route_ == nullptr) return {};
  MatchedRoute m;
  m.key = route_->metrics_key;
  m.route_id = route_->id;
  m.route_name = route_->name;
  m.service_id = route_->service_id;
  m.service_name = route_->service_name;
  if (match_ != nullptr) {
    m.matched_uri = match_->matched_uri;
    m.matched_host = match_->matched_host;
  }
  return m;
}

void RequestContext::Begin(const ConnectionInfo* conn, const http::RequestHead* req,
                           std::string_view uri, std::string_view host,
                           std::string_view remote_addr) {
  conn_ = conn;
  req_ = req;
  route_ = nullptr;
  match_ = nullptr;
  from_upstream_ = false;
  uri_ = uri;
  host_ = host;
  remote_addr_ = remote_addr;
  status_ = 0;
  params_.count = 0;
  request_uri_built_ = false;
  request_edits_.Clear();
  response_edits_.Clear();
  responded_ = false;
  respond_status_ = 0;
  body_modified_ = false;
  buffered_body_.reset();
  post_args_parsed_ = false;
  upstream_response_headers_ = nullptr;
  pause_ = PausedRequest();
  upstream_uri_.clear();
  upstream_method_.clear();
  upstream_host_.clear();
  states_.EndRequest();  // a no-op when the previous request ended properly
}

void RequestContext::MarkBodyModified() {
  body_modified_ = true;
  // What described the node's body no longer does (a compressed body is replaced whole).
  response_edits_.Remove("Content-Encoding");
  response_edits_.Remove("Last-Modified");
  response_edits_.Remove("ETag");
}

std::optional<std::string_view> RequestContext::ResponseHeader(std::string_view name) {
  if (const http::HeaderEdit* edited = response_edits_.Decides(name)) {
    if (edited->remove) return std::nullopt;
    return edited->value;
  }
  if (upstream_response_headers_ != nullptr) {
    for (const http::Header& h : *upstream_response_headers_) {
      if (base::EqualsIgnoreCase(h.name, name)) return h.value;
    }
  }
  return std::nullopt;
}

WorkerState* RequestContext::FindWorkerState(const Plugin& plugin) {
  return runner_ != nullptr ? runner_->FindWorkerState(plugin) : nullptr;
}

void RequestContext::Respond(int status, std::string_view body) {
  responded_ = true;
  respond_status_ = status;
  respond_body_.assign(body);
}

void RequestContext::SetUpstreamUri(std::string_view uri) { upstream_uri_.assign(uri); }

void RequestContext::SetUri(std::string_view uri) {
  uri_override_.assign(uri);
  uri_ = uri_override_;
  request_uri_built_ = false;  // $request_uri is "$uri?$args"
}

void RequestContext::SetUpstreamMethod(std::string_view method) {
  upstream_method_.assign(method);
  upstream_method_enum_ = base::ParseMethod(method);
}

void RequestContext::SetUpstreamHost(std::string_view host) { upstream_host_.assign(host); }

base::Method RequestContext::upstream_method() const {
  if (!upstream_method_.empty()) return upstream_method_enum_;
  return req_ != nullptr ? req_->method : base::Method::kOther;
}

PausedRequest RequestContext::Pause() {
  if (pause_table_ == nullptr || pause_owner_ == nullptr) return {};
  pause_table_->Cancel(pause_);  // a second Pause() in one hook replaces the first
  pause_ = pause_table_->Add(pause_owner_);
  return pause_;
}

void RequestContext::VisitRequestHeaders(HeaderVisitor& visitor) const {
  if (req_ == nullptr) return;
  for (const http::Header& h : req_->headers) visitor.Visit(h.name, h.value);
}

std::optional<std::string_view> RequestContext::Header(std::string_view lower_name) const {
  for (const http::Header& h : req_->headers) {
    if (base::EqualsIgnoreCase(h.name, lower_name)) return h.value;
  }
  return std::nullopt;
}

std::optional<std::string_view> RequestContext::QueryArg(std::string_view query,
                                                         std::string_view name) {
  // nginx $arg_NAME: the first `NAME=value` pair, raw (not percent-decoded); a bare `NAME`
  // gives "".
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    if (key == name) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::optional<std::string_view> RequestContext::CookieValue(std::string_view cookies,
                                                            std::string_view name) {
  while (!cookies.empty()) {
    size_t semi = cookies.find(';');
    std::string_view pair = base::TrimWhitespace(cookies.substr(0, semi));
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    if (semi == std::string_view::npos) break;
    cookies.remove_prefix(semi + 1);
  }
  return std::nullopt;
}

// APISIX's post_arg_NAME (core/ctx.lua): only for a Content-Type starting with
// application/x-www-form-urlencoded, the first value of the decoded field. Bodies the proxy
// did not read whole (none needed it, or it was over client_body_buffer_size: nginx put it in
// a temp file, which get_post_args refuses) have no fields.
std::optional<std::string_view> RequestContext::PostArg(std::string_view name) {
  if (!buffered_body_) return std::nullopt;
  if (!post_args_parsed_) {
    std::optional<std::string_view> type = Header("content-type");
    if (!type || !IsFormContentType(*type)) return std::nullopt;
    post_args_.Parse(*buffered_body_);
    post_args_parsed_ = true;
  }
  return post_args_.Get(name);
}

// nginx's $remote_user (ngx_http_auth_basic_user): the client's `Authorization: Basic
// <base64 of user:password>`, the name before the first ':'. nil without such a header, when
// it does not decode, or when the name is empty or has no ':' after it.
std::optional<std::string_view> RequestContext::RemoteUser() {
  std::optional<std::string_view> auth = Header("authorization");
  constexpr std::string_view kBasic = "Basic ";
  if (!auth || auth->size() < kBasic.size() ||
      !base::EqualsIgnoreCase(auth->substr(0, kBasic.size()), kBasic)) {
    return std::nullopt;
  }
  std::string_view credentials = auth->substr(kBasic.size());
  while (!credentials.empty() && credentials.front() == ' ') credentials.remove_prefix(1);
  remote_user_.clear();
  if (credentials.empty() || !base::AppendBase64Decoded(&remote_user_, credentials)) {
    return std::nullopt;
  }
  size_t colon = remote_user_.find(':');
  if (colon == 0 || colon == std::string::npos) return std::nullopt;
  return std::string_view(remote_user_).substr(0, colon);
}

bool RequestContext::IsFormContentType(std::string_view content_type) {
  constexpr std::string_view kForm = "application/x-www-form-urlencoded";
  return content_type.substr(0, kForm.size()) == kForm;
}

std::optional<std::string_view> RequestContext::Get(const VarRef& var) {
  switch (var.kind) {
    case VarRef::Kind::kBuiltin:
      return Builtin(var.builtin);
    case VarRef::Kind::kHeader:
      // As in nginx after ngx.req.set_header: a header a plugin set or removed for the
      // upstream request reads as set or removed from then on (proxy-rewrite's headers seen
      // by a later plugin's key, request-id's generated id by the logger).
      if (!request_edits_.empty()) {
        if (const http::HeaderEdit* edit = request_edits_.Decides(var.name)) {
          if (edit->remove) return std::nullopt;
          return edit->value;
        }
      }
      return Header(var.name);
    case VarRef::Kind::kArg:
      return QueryArg(req_->query, var.name);
    case VarRef::Kind::kCookie:
      for (const http::Header& h : req_->headers) {
        if (!base::EqualsIgnoreCase(h.name, "cookie")) continue;
        if (auto v = CookieValue(h.value, var.name)) return v;
      }
      return std::nullopt;
    case VarRef::Kind::kPostArg:
      return PostArg(var.name);
    case VarRef::Kind::kUriParam:
      for (uint8_t i = 0; i < params_.count; ++i) {
        if (params_.names[i] == var.name) return params_.values[i];
      }
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string_view> RequestContext::Builtin(BuiltinVar v) {
  switch (v) {
    case BuiltinVar::kRemoteAddr:
      return remote_addr_;
    case BuiltinVar::kRemotePort:
      return conn_->peer_port;
    case BuiltinVar::kRealipRemoteAddr:
      return conn_->peer_ip;
    case BuiltinVar::kServerAddr:
      return conn_->local_ip;
    case BuiltinVar::kServerPort:
      return conn_->local_port;
    case BuiltinVar::kScheme:
      return std::string_view("http");
    case BuiltinVar::kHost:
      return host_;
    case BuiltinVar::kUri:
      return uri_;
    case BuiltinVar::kRequestUri:
      if (!request_uri_built_) {
        request_uri_.assign(uri_);
        if (!req_->query.empty()) {
          request_uri_.push_back('?');
          request_uri_.append(req_->query);
        }
        request_uri_built_ = true;
      }
      return std::string_view(request_uri_);
    case BuiltinVar::kRealRequestUri:
      return req_->target;
    case BuiltinVar::kArgs:
    case BuiltinVar::kQueryString:
      return req_->query;
    case BuiltinVar::kIsArgs:
      return req_->query.empty() ? std::string_view() : std::string_view("?");
    case BuiltinVar::kRequestMethod:
      return req_->method_name;
    case BuiltinVar::kRequestLength:  // known in the log phase only
      return facts_.Get(v, *req_, false);
    case BuiltinVar::kRouteId:
      if (route_ == nullptr) return std::nullopt;
      return std::string_view(route_->id);
    case BuiltinVar::kRouteName:
      if (route_ == nullptr || route_->name.empty()) return std::nullopt;
      return std::string_view(route_->name);
    case BuiltinVar::kServiceId:
      if (route_ == nullptr || route_->service_id.empty()) return std::nullopt;
      return std::string_view(route_->service_id);
    case BuiltinVar::kServiceName:
      if (route_ == nullptr || route_->service_name.empty()) return std::nullopt;
      return std::string_view(route_->service_name);
    case BuiltinVar::kUpstreamUri:
      return upstream_uri_.empty() ? req_->target : std::string_view(upstream_uri_);
    case BuiltinVar::kStatus: {
      if (status_ == 0) return std::nullopt;
      auto [p, ec] = std::to_chars(status_text_, status_text_ + sizeof(status_text_), status_);
      return std::string_view(status_text_, static_cast<size_t>(p - status_text_));
    }
    case BuiltinVar::kContentType:
      return Header("content-type");
    case BuiltinVar::kContentLength:
      return Header("content-length");
    case BuiltinVar::kServerProtocol:
      return std::string_view(req_->version_minor == 0 ? "HTTP/1.0" : "HTTP/1.1");
    case BuiltinVar::kDocumentUri:
      return uri_;
    case BuiltinVar::kRemoteUser:
      return RemoteUser();
    case BuiltinVar::kServerName:
    case BuiltinVar::kHostname:
    case BuiltinVar::kRequest:
    case BuiltinVar::kRequestTime:
    case BuiltinVar::kMsec:
    case BuiltinVar::kTimeIso8601:
    case BuiltinVar::kTimeLocal:
    case BuiltinVar::kConnection:
    case BuiltinVar::kConnectionRequests:
    case BuiltinVar::kRequestId:
    case BuiltinVar::kPid:
    case BuiltinVar::kBytesSent:
    case BuiltinVar::kBodyBytesSent:
    case BuiltinVar::kUpstreamScheme:
    case BuiltinVar::kUpstreamHost:
    case BuiltinVar::kUpstreamAddr:
    case BuiltinVar::kUpstreamStatus:
    case BuiltinVar::kUpstreamConnectTime:
    case BuiltinVar::kUpstreamHeaderTime:
    case BuiltinVar::kUpstreamResponseTime:
    case BuiltinVar::kBalancerIp:
    case BuiltinVar::kBalancerPort:
    case BuiltinVar::kRequestBody:
      return facts_.Get(v, *req_, route_ != nullptr && route_->upstream != nullptr);
    case BuiltinVar::kCount:
      break;
  }
  return std::nullopt;
}

}  // namespace turnpike::proxy
