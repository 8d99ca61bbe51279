// KubeInformer: List + Watch of one Kubernetes resource collection (Endpoints or
// EndpointSlices of every namespace) against one API server, on the control loop, as APISIX's
// kubernetes/informer_factory.lua does, through the control-loop HTTP client.
//
//   list:  GET <path>?limit=120[&continue=..][&labelSelector=..][&fieldSelector=..]
//          (whole-body mode, page after page while metadata.continue is set); the pages'
//          items are handed over together, once the last page is in (OnList), so a relist
//          replaces the informer's view at once, never half of it.
//   watch: GET <path>?watch=true&allowWatchBookmarks=true&timeoutSeconds=<1800+rand>
//          &resourceVersion=<rv>[&selectors] (streaming mode): one JSON event per line,
//          ADDED / MODIFIED / DELETED (OnEvent), BOOKMARK (only the resourceVersion moves),
//          ERROR. Each event's resourceVersion becomes the next watch's.
// Every request carries `Authorization: Bearer <token>` (a token file is read again before
// each request) and `Accept: application/json`. Answers are parsed with simdjson (a 60 KB
// event of 250 endpoints in ~25 us, against ~650 us into an nlohmann::json document): under
// node churn the parse was most of a change's CPU on the control thread.
//
// What happens when:
//   - the watch ends cleanly (the server's timeoutSeconds): a new watch from the last
//     resourceVersion, at once (after retry_min_ms when it lasted under a second);
//   - 410 Gone (an ERROR event with code 410, or the HTTP status; also an expired `continue`
//     token while listing): relist from scratch, at once (after retry_min_ms when the last
//     410 was under a second ago);
//   - anything else fails (connect, 401/403/5xx, a read timeout, a malformed event, a closed
//     stream): nothing is handed over (the last good view stays) and the same step (list, or
//     watch from the last resourceVersion) is retried after a back-off of retry_min_ms,
//     doubling up to retry_max_ms, reset once a list completes or a watch is answered 200.
// A host name (not an IP literal) is looked up with c-ares (system resolv.conf and hosts)
// before each list.
//
// Thread rules: control thread only (the loop given to Start). Callbacks run from the loop,
// never inside Start(); they may call Stop() but must not destroy the informer.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <simdjson.h>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/kubernetes_config.h"
#include "http_client/client.h"

namespace turnpike::discovery {

class AresResolver;

// `value` percent-encoded for a query string (everything but A-Z a-z 0-9 - . _ ~), as
// ngx.encode_args does.
std::string UrlEncodeComponent(std::string_view value);

class KubeInformer {
 public:
  struct Callbacks {
    // A complete list (every page's items, in order), replacing what came before. The
    // elements are valid during the call only.
    std::function<void(const std::vector<simdjson::dom::element>& items)> on_list;
    // A watch event: type "ADDED", "MODIFIED" or "DELETED" and its object (valid during the
    // call only).
    std::function<void(std::string_view type, simdjson::dom::element object)> on_event;
  };
  struct Stats {
    uint64_t lists = 0;    // complete lists handed over
    uint64_t pages = 0;    // list requests answered 200
    uint64_t watches = 0;  // watch requests answered 200
    uint64_t events = 0;   // ADDED / MODIFIED / DELETED
    uint64_t bookmarks = 0;
    uint64_t gone = 0;      // 410s (relists)
    uint64_t failures = 0;  // failed requests (back-off)
  };

  KubeInformer(const KubernetesClusterConfig& config, Callbacks callbacks);
  // REQUIRES: Stop() was called and the loop ran its close callbacks (or Start() never was).
  ~KubeInformer();
  KubeInformer(const KubeInformer&) = delete;
  KubeInformer& operator=(const KubeInformer&) = delete;

  // Starts the first list (from the loop, not inside this call).
  void Start(uv_loop_t* loop);
  // Cancels the request in flight and the timers; no callback follows. Idempotent.
  void Stop();

  // The collection's path: /api/v1/endpoints or /apis/discovery.k8s.io/v1/endpointslices.
  const std::string& path() const { return path_; }
  const std::string& resource_version() const { return rv_; }
  bool listed() const { return stats_.lists > 0; }
  // Where the informer is: "listing", "watching", "waiting to retry", ...
  const char* state() const;
  const Stats& stats() const { return stats_; }
  uint64_t backoff_ms() const { return backoff_ms_; }

 private:
  enum class Step { kIdle, kResolving, kListing, kWatching, kRetryList, kRetryWatch, kStopped };

  void Arm(uint64_t ms);
  static void OnTimer(uv_timer_t* t);
  void BeginList();  // resolves the host first when needed
  void ListPage();
  void OnListDone(http_client::Result result);
  void BeginWatch();
  void OnWatchHead(const http_client::Response& head);
  void OnWatchBody(std::string_view piece);
  void OnWatchDone(http_client::Result result);
  // false: the stream must end (the step to take next was set).
  bool HandleEvent(std::string_view line);
  void Relist();                                  // after 410
  void Fail(Step retry, const std::string& why);  // back-off, then `retry`
  bool Prepare(http_client::Request* req);        // auth header; false when the token is unreadable
  std::string Selectors() const;

  KubernetesClusterConfig config_;
  Callbacks cb_;
  std::string path_;
  std::string list_kind_;
  std::string where_;  // for logs: "kubernetes[id] endpoints"
  uv_loop_t* loop_ = nullptr;
  std::unique_ptr<http_client::Client> client_;
  std::unique_ptr<AresResolver> resolver_;  // for a host name
  uint64_t lookup_ = 0;
  http_client::Origin origin_;
  bool have_origin_ = false;
  uv_timer_t* timer_ = nullptr;  // heap: freed in its close callback
  http_client::RequestHandle request_;
  Step step_ = Step::kIdle;
  std::string rv_;
  std::string continue_;
  simdjson::dom::parser parser_;  // watch events (its buffers are reused event after event)
  // The list in progress: each page's document, and their items.
  std::vector<std::unique_ptr<simdjson::dom::document>> page_docs_;
  std::vector<simdjson::dom::element> items_;
  std::string line_;                   // the watch stream's unfinished line
  bool stream_ended_ = false;          // the watch stream asked to stop (410 / bad event)
  int watch_status_ = 0;               // the watch answer's status once its head came
  uint64_t watch_started_ms_ = 0;      // loop time the current watch was sent
  uint64_t last_gone_ms_ = 0;          // loop time of the last 410
  uint64_t backoff_ms_ = 0;
  bool failing_ = false;  // logged once per failure streak
  Stats stats_;
};

}  // namespace turnpike::discovery
