// A PluginContext for plugin unit tests: variables from a map keyed by the name as written
// ("remote_addr", "http_x_a", "status"; SetUri() writes "uri"), header edits recorded in order,
// request states like the proxy's (turnpike::RequestStateStore, reset by NextRequest()), and the
// worker states of a one-worker proxy (made by the plugin's CreateWorkerState() on first use, kept
// until the context goes). Header names compare case-insensitively.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "turnpike/plugin.h"

namespace turnpike::plugins::testing {

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  return out;
}

class FakePluginContext : public PluginContext {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  std::optional<std::string_view> Get(const VarRef& var) override {
    std::string key = var.kind == VarRef::Kind::kHeader ? "http_" + var.name : var.source;
    if (var.kind == VarRef::Kind::kBuiltin && var.builtin == BuiltinVar::kStatus) {
      status_text = std::to_string(status);
      return std::string_view(status_text);
    }
    if (var.kind == VarRef::Kind::kHeader) {
      for (const auto& [n, v] : request_headers) {
        if (Lower(n) == var.name) return std::string_view(v);
      }
      return std::nullopt;
    }
    auto it = vars.find(key);
    if (it == vars.end()) return std::nullopt;
    return std::string_view(it->second);
  }
  void Respond(int s, std::string_view body) override {
    responded = true;
    respond_status = s;
    respond_body = std::string(body);
  }
  void SetRequestHeader(std::string_view n, std::string_view v) override {
    upstream_headers[Lower(n)] = std::string(v);
    request_edits.push_back({"set", std::string(n), std::string(v)});
  }
  void RemoveRequestHeader(std::string_view n) override {
    upstream_headers.erase(Lower(n));
    request_edits.push_back({"remove", std::string(n), {}});
  }
  void AddRequestHeader(std::string_view n, std::string_view v) override {
    upstream_headers[Lower(n)] = std::string(v);
    request_edits.push_back({"add", std::string(n), std::string(v)});
  }
  void SetUri(std::string_view uri) override { vars["uri"] = std::string(uri); }
  void SetUpstreamUri(std::string_view uri) override { upstream_uri = std::string(uri); }
  void SetUpstreamMethod(std::string_view m) override { upstream_method = std::string(m); }
  void SetUpstreamHost(std::string_view h) override { upstream_host = std::string(h); }
  int response_status() const override { return status; }
  void SetResponseHeader(std::string_view n, std::string_view v) override {
    Erase(n);
    response_headers.emplace_back(std::string(n), std::string(v));
  }
  void AddResponseHeader(std::string_view n, std::string_view v) override {
    response_headers.emplace_back(std::string(n), std::string(v));
  }
  void RemoveResponseHeader(std::string_view n) override { Erase(n); }
  void MarkBodyModified() override {
    body_modified = true;
    Erase("Content-Length");
    Erase("Content-Encoding");
    Erase("Last-Modified");
    Erase("ETag");
  }
  void SetResponseStatus(int s) override { status = s; }
  std::optional<std::string_view> ResponseHeader(std::string_view n) override {
    for (const auto& [name, v] : response_headers) {
      if (Lower(name) == Lower(n)) return std::string_view(v);
    }
    return std::nullopt;
  }
  void* FindRequestState(const void* key, const RequestStateType& type) override {
    return states.Find(key, type);
  }
  WorkerState* FindWorkerState(const Plugin& plugin) override {
    if (!plugin.has_worker_state()) return nullptr;
    std::unique_ptr<WorkerState>& state = worker_states[&plugin];
    if (state == nullptr) state = plugin.CreateWorkerState(WorkerEnvironment{});
    return state.get();
  }

  // The lines of request header `n` the upstream would get: the client's, then the edits
  // applied in order (set replaces all, add appends, remove drops all).
  std::vector<std::string> UpstreamValues(std::string_view n) const {
    std::vector<std::string> out;
    for (const auto& [name, v] : request_headers) {
      if (Lower(name) == Lower(n)) out.push_back(v);
    }
    for (const Edit& e : request_edits) {
      if (Lower(e.name) != Lower(n)) continue;
      if (e.op != "add") out.clear();
      if (e.op != "remove") out.push_back(e.value);
    }
    return out;
  }
  // All values of response header `n`, in order.
  std::vector<std::string> ResponseValues(std::string_view n) const {
    std::vector<std::string> out;
    for (const auto& [name, v] : response_headers) {
      if (Lower(name) == Lower(n)) out.push_back(v);
    }
    return out;
  }
  // A new request on the same connection.
  void NextRequest() {
    states.EndRequest();
    upstream_headers.clear();
    request_edits.clear();
    upstream_uri.reset();
    upstream_method.reset();
    upstream_host.reset();
    response_headers.clear();
    responded = false;
    body_modified = false;
  }

  std::map<std::string, std::string> vars;              // builtin / arg_ / cookie_ vars by name
  Headers request_headers;                              // what the client sent
  std::map<std::string, std::string> upstream_headers;  // request header edits, lowercased
  struct Edit {
    std::string op;  // "set", "add", "remove"
    std::string name, value;
  };
  std::vector<Edit> request_edits;  // every request header edit, in order
  std::optional<std::string> upstream_uri, upstream_method, upstream_host;  // SetUpstream*
  Headers response_headers;  // the response's headers (start with the node's)
  int status = 200;
  bool responded = false;
  int respond_status = 0;
  std::string respond_body;
  bool body_modified = false;
  RequestStateStore states;
  std::map<const Plugin*, std::unique_ptr<WorkerState>> worker_states;

 private:
  void Erase(std::string_view n) {
    std::erase_if(response_headers, [&](const auto& h) { return Lower(h.first) == Lower(n); });
  }
  std::string status_text;
};

// Runs `pieces` through the body filter as the proxy does; returns what the client gets.
inline std::string FilterBody(const Plugin& plugin, PluginContext& ctx,
                              const std::vector<std::string>& pieces) {
  std::string out;
  std::string scratch[2];
  for (size_t i = 0; i < pieces.size(); ++i) {
    BodyPiece piece{pieces[i], i == 0, i + 1 == pieces.size(), &scratch[i % 2]};
    plugin.BodyFilter(ctx, piece);
    out.append(piece.data);
    if (piece.last) break;
  }
  return out;
}

}  // namespace turnpike::plugins::testing
