// The plugin interface (reference §2.5): what a plugin author implements.
//
// Every plugin has a config part and a runtime part (Envoy's split): a PluginFactory
// validates and compiles a plugin's configuration once, on the control thread, into an
// immutable Plugin, which all workers then share. Phases are hooks with no-op defaults
// (Pingora's style), run in APISIX's order: rewrite -> access -> header_filter ->
// body_filter -> log. Plugins on one route run by priority, highest first; global rules run
// before the route's plugins in every phase.
//
// Because the Plugin is shared and immutable, what a plugin keeps has a scope of its own:
// per request, PluginContext::RequestState<T>(this) (request_state.h); per worker,
// Plugin::CreateWorkerState and PluginContext::worker_state<T>(*this) (worker_state.h); per
// process, the factory's Service (service.h).
#pragma once

#include <cassert>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "turnpike/factory_context.h"
#include "turnpike/request_state.h"
#include "turnpike/request_vars.h"
#include "turnpike/service.h"
#include "turnpike/status.h"
#include "turnpike/worker_state.h"

namespace turnpike {

enum PluginPhase : uint32_t {
  kPhaseRewrite = 1u << 0,
  kPhaseAccess = 1u << 1,
  kPhaseHeaderFilter = 1u << 2,
  kPhaseBodyFilter = 1u << 3,
  kPhaseLog = 1u << 4,
};

// What a rewrite or access hook tells the chain.
enum class PhaseResult : uint8_t {
  kContinue,  // run the next plugin
  kRespond,   // the plugin called PluginContext::Respond: answer the request now
  kPause,     // the plugin is waiting for I/O (see PluginContext::Pause); the chain goes on
              // with the next plugin when it resumes
};

class Plugin;
class PluginContext;

// A request a plugin paused (PluginContext::Pause), held by the plugin while its I/O is in
// flight; Resume() goes on with the chain. A plain value (a table, a slot and a generation):
// copying it allocates nothing, and a handle whose request went away (the client closed) or
// already resumed is stale, so a late completion is harmless.
//
// Worker thread only: the worker that runs the request, from any callback of its loop (a
// Redis reply) or from another request's phase.
class PausedRequest {
 public:
  // Implemented by the proxy (one table per worker).
  class Table {
   public:
    virtual PluginContext* Context(uint32_t slot, uint32_t generation) = 0;
    virtual void Resume(uint32_t slot, uint32_t generation) = 0;

   protected:
    ~Table() = default;
  };

  PausedRequest() = default;  // stale
  PausedRequest(Table* table, uint32_t slot, uint32_t generation)
      : table_(table), slot_(slot), generation_(generation) {}

  // The paused request's context: set headers or variables, or Respond() to answer instead
  // of going on. nullptr once the request is gone or resumed.
  PluginContext* context() const {
    return table_ != nullptr ? table_->Context(slot_, generation_) : nullptr;
  }
  bool alive() const { return context() != nullptr; }
  // Goes on with the plugin after the one that paused (or answers, after Respond() on
  // context()). The rest of the request runs inside this call, up to its next wait. Does
  // nothing for a stale handle; only the first call after a pause counts. May be called
  // from inside the hook that paused, before it returns kPause: the chain then goes on as
  // soon as the hook returns.
  void Resume() const {
    if (table_ != nullptr) table_->Resume(slot_, generation_);
  }

  Table* table() const { return table_; }
  uint32_t slot() const { return slot_; }
  uint32_t generation() const { return generation_; }

 private:
  Table* table_ = nullptr;
  uint32_t slot_ = 0;
  uint32_t generation_ = 0;
};

// Receives headers from PluginContext::VisitRequestHeaders / VisitResponseHeaders; the views
// are valid during the call only. ForEachHeader() below adapts a lambda.
class HeaderVisitor {
 public:
  virtual void Visit(std::string_view name, std::string_view value) = 0;

 protected:
  ~HeaderVisitor() = default;
};

// When the request happened, for loggers (APISIX's start_time / latency / upstream_latency).
struct RequestTiming {
  int64_t start_ms = 0;      // wall clock (Unix ms) when the request head had been read
  int64_t latency_ms = -1;   // log phase: head read -> now; -1 before
  int64_t upstream_ms = -1;  // log phase: $upstream_response_time summed over the attempts, in
                             // ms; -1 when no upstream was contacted
};

// How many bytes a request moved, for metrics (APISIX's $request_length and $bytes_sent as
// numbers: no text to format and parse back). Both are -1 before the log phase.
struct RequestSizes {
  int64_t request_length = -1;  // the request's head and body as read from the client
  int64_t bytes_sent = -1;      // the response's head and body as written to the client
};

// The route a request matched, for metrics (prometheus' route, service, matched_uri and
// matched_host labels). Views into the pinned snapshot: valid until the request ends.
struct MatchedRoute {
  // Unique in the process for one route of one snapshot (0: no route matched), so a worker
  // may cache what it derived from the route under this key: a reload gives new keys.
  uint64_t key = 0;
  std::string_view route_id, route_name;      // name "" when the route has none
  std::string_view service_id, service_name;  // "" without a service
  std::string_view matched_uri;               // the configured uri that matched ("/foo*")
  std::string_view matched_host;              // the host pattern that matched; "" for none
};

// What a phase may see and change. Implemented by the proxy; valid during the phase call.
// Worker thread only. Strings passed in are copied.
class PluginContext : public RequestVars {
 public:
  // rewrite / access: answer the request now; no upstream is contacted. The remaining
  // rewrite/access plugins are skipped; header_filter, body_filter and log still run.
  virtual void Respond(int status, std::string_view body) = 0;
  // rewrite / access: waits for the plugin's I/O; the hook then returns PhaseResult::kPause
  // and the request sits (its input stays buffered, nothing is sent upstream) until the
  // handle's Resume(). A plugin that pauses must resume or let its I/O time out: the proxy
  // does not time a paused request out. Contexts without pause support return a stale
  // handle (a test double; the proxy's context always supports it).
  virtual PausedRequest Pause() { return {}; }

  // rewrite / access: headers of the request sent upstream. Set replaces every header of the
  // name (the client's and earlier edits), Add sends one more line and keeps the others
  // (ngx.req.add_header; a Set then Adds of one name send several lines), Remove drops them
  // all. Later `http_*` variables read the edited value (the newest one of the name). The
  // proxy sends names and values as given, except that it never lets a plugin frame the body
  // or end the head: Content-Length, Transfer-Encoding, Connection and the other hop-by-hop
  // headers are not sent, and control bytes (CR, LF, NUL, < 0x20, 0x7f) go out as %XX.
  // X-Forwarded-Proto/Host/Port replace the proxy's own; X-Forwarded-For is sent followed by
  // ", <client address>". Host is the upstream Host: use SetUpstreamHost. Copies; no
  // allocation once the request's edit buffers are warm.
  virtual void SetRequestHeader(std::string_view name, std::string_view value) = 0;
  virtual void RemoveRequestHeader(std::string_view name) = 0;
  virtual void AddRequestHeader(std::string_view name, std::string_view value) {
    SetRequestHeader(name, value);
  }

  // rewrite / access: the request line and Host sent upstream (proxy-rewrite's uri, method
  // and host). `uri` is an origin-form target sent as is ("/path?query"); $upstream_uri
  // reports it. `method` is a method token. `host` replaces the Host header the upstream's
  // pass_host `pass` would send ($upstream_host reports it); with pass_host `node` or
  // `rewrite` the upstream's Host wins, as in APISIX, which applies them after the plugins.
  // What the client sent, and $request_method, $host, and $uri (unless SetUri), stay as they
  // were. The last call wins. Control bytes go out as %XX (see SetRequestHeader), and so do
  // spaces in the method and the target.
  virtual void SetUpstreamUri(std::string_view /*uri*/) {}
  virtual void SetUpstreamMethod(std::string_view /*method*/) {}
  virtual void SetUpstreamHost(std::string_view /*host*/) {}
  // rewrite / access: the request's new path, nginx's ngx.req.set_uri(): from now on $uri
  // (and $request_uri, $document_uri) read it, in later plugins, later phases and the access
  // log. The upstream target is not changed by it: SetUpstreamUri says what is sent (when no
  // plugin sets one, the client's raw target is). Copied; no allocation once warm.
  virtual void SetUri(std::string_view /*uri*/) {}

  // header_filter: the response about to be sent.
  virtual int response_status() const = 0;
  virtual void SetResponseHeader(std::string_view name, std::string_view value) = 0;
  virtual void RemoveResponseHeader(std::string_view name) = 0;
  // header_filter: the body will change, so Content-Length is dropped and Content-Encoding,
  // Last-Modified and ETag are removed (APISIX's clear_header_as_body_modified); the client
  // gets a chunked body.
  virtual void MarkBodyModified() = 0;

  // The members below have defaults only so that minimal test doubles keep compiling; the
  // proxy's context implements all of them.

  // header_filter: replaces the status sent to the client (later filters see the new one in
  // response_status() and $status).
  virtual void SetResponseStatus(int /*status*/) {}
  // header_filter: adds a response header, keeping those of the same name (nginx's
  // add_header; a later Set/Remove of the name replaces them all).
  virtual void AddResponseHeader(std::string_view name, std::string_view value) {
    SetResponseHeader(name, value);
  }
  // header_filter: the response header `name` (case-insensitive) as it stands: the node's
  // header unless a plugin set or removed it. nullopt when absent (and for Turnpike's own
  // answers, which carry no node headers). The view is valid during the phase call.
  virtual std::optional<std::string_view> ResponseHeader(std::string_view /*name*/) {
    return std::nullopt;
  }
  // Any phase: the request-scope state of type T under `key` (request_state.h: created on
  // first use in the request, reset when it ends, its memory reused by the next request).
  // `key` is an address the plugin owns, normally `this`. The reference stays valid for the
  // whole request, whatever other states are asked for meanwhile.
  template <typename T>
  T& RequestState(const void* key) {
    return *static_cast<T*>(FindRequestState(key, RequestStateTypeOf<T>()));
  }

  // Any phase: this worker's state of `plugin` (worker_state.h), as its CreateWorkerState()
  // made it. `plugin` is the instance asking (`*this`). REQUIRES: plugin.has_worker_state(),
  // T is the type its CreateWorkerState() returns (checked in debug builds), and `plugin` is
  // in the request's chains. One indexed load from the plugin's own hooks.
  template <typename T>
  T& worker_state(const Plugin& plugin) {
    static_assert(std::is_base_of_v<WorkerState, T>, "a worker state derives from WorkerState");
    WorkerState* state = FindWorkerState(plugin);
    assert(state != nullptr && "worker_state: no worker state for this plugin instance");
    assert(dynamic_cast<T*>(state) != nullptr && "worker_state: not the type it was made with");
    return *static_cast<T*>(state);
  }

  // What RequestState() calls: the state's memory, never null (request_state.h's
  // RequestStateStore implements it).
  virtual void* FindRequestState(const void* key, const RequestStateType& type) = 0;
  // What worker_state() calls; nullptr when this context has no worker state for `plugin`
  // (the proxy's always has it for the plugins of the request; test doubles may not).
  virtual WorkerState* FindWorkerState(const Plugin& /*plugin*/) { return nullptr; }

  // Any phase: the request headers as received (names as sent, arrival order, repeats kept).
  virtual void VisitRequestHeaders(HeaderVisitor& /*visitor*/) const {}
  // log: the response headers as sent to the client (Turnpike's own included: Server, Date,
  // Content-Length...); before the log phase, nothing.
  virtual void VisitResponseHeaders(HeaderVisitor& /*visitor*/) const {}
  // Any phase; latency_ms and upstream_ms are set in the log phase.
  virtual RequestTiming timing() const { return {}; }
  // log: the request's and the response's sizes ($request_length, $bytes_sent).
  virtual RequestSizes sizes() const { return {}; }
  // Any phase after routing (global rules see it too): the matched route; key 0 when none.
  virtual MatchedRoute matched_route() const { return {}; }
  // log: whether the response head the client got came from a node (false when Turnpike
  // answered itself: 404, a plugin's Respond, 502/503/504).
  virtual bool response_from_upstream() const { return false; }

 protected:
  ~PluginContext() = default;
};

// Calls fn(name, value) for each header `visit` (&PluginContext::VisitRequestHeaders or
// &PluginContext::VisitResponseHeaders) reports. No allocation.
template <typename Fn>
void ForEachHeader(const PluginContext& ctx, void (PluginContext::*visit)(HeaderVisitor&) const,
                   Fn&& fn) {
  struct Adapter final : HeaderVisitor {
    explicit Adapter(Fn& f) : fn(f) {}
    void Visit(std::string_view name, std::string_view value) override { fn(name, value); }
    Fn& fn;
  };
  Adapter adapter(fn);
  (ctx.*visit)(adapter);
}

// One piece of a response body passing through body_filter.
struct BodyPiece {
  std::string_view data;       // this piece (a later filter sees the previous filter's output)
  bool first = false;          // first piece of the body
  bool last = false;           // set by the proxy on the final piece; a filter may set it to end
                               // the body early (what follows from upstream is then dropped)
  std::string* out = nullptr;  // scratch a filter may write a replacement into (then point
                               // `data` at it)
};

class Plugin {
 public:
  virtual ~Plugin() = default;

  // Bit set of PluginPhase: the phases this instance implements (the chain calls only those).
  virtual uint32_t phases() const = 0;

  // True when this instance wants the request body in memory (file-logger's
  // include_req_body, `$request_body`): while a snapshot has such a plugin, workers read
  // request bodies of up to client_body_buffer_size before the request phases, as they do
  // for post_arg_* variables; larger bodies still stream and have no `$request_body`.
  virtual bool reads_request_body() const { return false; }

  // rewrite / access: kRespond only after PluginContext::Respond, kPause only after
  // PluginContext::Pause.
  virtual PhaseResult Rewrite(PluginContext&) const { return PhaseResult::kContinue; }
  virtual PhaseResult Access(PluginContext&) const { return PhaseResult::kContinue; }
  virtual void HeaderFilter(PluginContext&) const {}
  virtual void BodyFilter(PluginContext&, BodyPiece&) const {}
  virtual void Log(PluginContext&) const {}

  // Worker scope (worker_state.h). An instance that keeps state per worker says so here (the
  // snapshot build numbers such instances) and makes one state per worker in
  // CreateWorkerState(), which runs on that worker's thread when it first adopts a snapshot
  // containing the instance; hooks reach it with PluginContext::worker_state<T>(*this).
  // CreateWorkerState must not block (connect asynchronously on env.loop) and must not return
  // nullptr when has_worker_state() is true.
  virtual bool has_worker_state() const { return false; }
  virtual std::unique_ptr<WorkerState> CreateWorkerState(const WorkerEnvironment& /*env*/) const {
    return nullptr;
  }
};

using PluginConstSharedPtr = std::shared_ptr<const Plugin>;

class PluginFactory {
 public:
  virtual ~PluginFactory() = default;
  virtual std::string_view name() const = 0;
  virtual int priority() const = 0;
  // Control thread, once per plugin instance of a snapshot build that is new or changed (and
  // for every instance of `turnpike check`). Validates `conf` (a JSON object; `_meta` already
  // removed) and compiles it; `ctx` tells who owns the instance and gives the plugin's
  // metadata, attributes, clock and metrics (factory_context.h). Errors read like APISIX's
  // schema errors, e.g.
  // `property "body" validation failed: wrong type: expected string, got number`.
  // A reload keeps the previous snapshot's instance, without calling Create, when its owner
  // (kind and id), `conf`, metadata and attributes are unchanged; so the result must depend
  // on those alone. A failed Create is not kept: the next build calls it again.
  // TypedPluginFactory (typed_factory.h) writes this for the common case.
  virtual StatusOr<PluginConstSharedPtr> Create(const nlohmann::json& conf,
                                                FactoryContext& ctx) const = 0;

  // Control thread, once per instance of this plugin in every snapshot build, in config
  // order, whether Create() made it for this build or the build kept it from the previous
  // one: for checks that span instances (limit-count's "group conf mismatched"). `build`
  // numbers the build (a new number for each); an error skips the owner as a Create()
  // error does.
  virtual Status Admit(const Plugin& /*instance*/, uint64_t /*build*/) const {
    return Status::Ok();
  }

  // The process-scope service of this plugin kind (service.h), or nullptr (the default).
  // Owned by the factory; started and stopped by the daemon, never by `turnpike check`.
  virtual Service* service() const { return nullptr; }
};

}  // namespace turnpike
