// FakeKubeApiServer: a FAKE of the Kubernetes API server, for the kubernetes discovery
// provider's tests (the real one cannot be installed here). It serves, over plain HTTP/1.1 on
// 127.0.0.1, the two collections the provider reads, as the API documents them
// (https://kubernetes.io/docs/reference/using-api/api-concepts/):
//
//   GET /api/v1/endpoints                              (kind EndpointsList)
//   GET /apis/discovery.k8s.io/v1/endpointslices       (kind EndpointSliceList)
//   GET /api/v1/namespaces/<ns>/endpoints, .../namespaces/<ns>/endpointslices
//
//   - list: `limit` + `continue` pagination (items sorted by namespace/name, metadata.continue
//     while more remain; a continue token older than the last Compact() is 410 Expired),
//     metadata.resourceVersion = the store's current one;
//   - watch (`watch=true`): 200 with a chunked stream of one JSON event per line, ADDED /
//     MODIFIED / DELETED from `resourceVersion` on (without one: ADDED for every current
//     object first), BOOKMARK events when `allowWatchBookmarks=true` (on SendBookmarks() and
//     every Options::bookmark_interval_ms), ended after `timeoutSeconds`; a resourceVersion
//     older than the last Compact() gets an ERROR event with a 410 Status (or, with
//     Options::gone_as_http_status, an HTTP 410 answer);
//   - `labelSelector` (k=v, k==v, k!=v, k, !k, k in (a,b), k notin (a,b)) and
//     `fieldSelector` (metadata.namespace / metadata.name with =, ==, !=), applied to lists
//     and watch events (an event is sent when the object after the change matches);
//   - `Authorization: Bearer <token>` checked (401 Status otherwise) when a token is set;
//   - keep-alive: any number of requests per connection, one after the other.
// Simplifications, fine for a client's tests: a continued list pages through the current
// state (not a snapshot at the first page's version); an object leaving a label selector by
// a MODIFIED is not reported as DELETED.
//
// Threads: one accept thread and one per connection. Every public method is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace turnpike::testing {

class FakeKubeApiServer {
 public:
  enum class Kind { kEndpoints, kEndpointSlices };
  struct Options {
    std::string token = "fake-token";  // "": no authentication
    int bookmark_interval_ms = 0;      // 0: bookmarks only on SendBookmarks()
    bool gone_as_http_status = false;  // a too old watch: HTTP 410 instead of an ERROR event
  };
  struct Seen {
    std::string method, target, authorization;
    bool watch = false;
    int status = 0;
  };

  FakeKubeApiServer() : FakeKubeApiServer(Options{}) {}
  explicit FakeKubeApiServer(Options options);
  ~FakeKubeApiServer();
  FakeKubeApiServer(const FakeKubeApiServer&) = delete;
  FakeKubeApiServer& operator=(const FakeKubeApiServer&) = delete;

  // Listens on 127.0.0.1: a free port the first time, the same port after a Stop() (the
  // stored objects and their history survive, as an API server restart). False on failure.
  bool Start();
  // Closes the listener and every connection: the API server is down.
  void Stop();
  int port() const { return port_; }
  bool running() const { return listen_fd_ >= 0; }

  // Creates or replaces an object (metadata.namespace and metadata.name required): gives it
  // the next resourceVersion, records ADDED or MODIFIED, wakes the watches. Returns the
  // version.
  int64_t Apply(Kind kind, nlohmann::json object);
  // Removes an object (DELETED with its last state). Returns the version; 0 if absent.
  int64_t Delete(Kind kind, const std::string& ns, const std::string& name);
  // Forgets the history so far: a watch from an older resourceVersion, or a continue token
  // issued before, gets 410 Gone. Watches already open still get every event they had not
  // sent yet.
  void Compact();
  // Every open watch gets an ERROR event with a 410 Status and ends.
  void ExpireWatches();
  // Every open watch ends cleanly (the terminating chunk), as at its timeoutSeconds.
  void EndWatches();
  // Every open watch that allows bookmarks gets a BOOKMARK at the current version.
  void SendBookmarks();
  void set_token(std::string token);
  // Answer every request with this status and a Status body (0: serve normally).
  void set_fail_status(int status);

  int64_t resource_version() const;
  std::vector<Seen> requests() const;
  int lists() const;         // list requests answered 200
  int watches() const;       // watch requests answered 200
  int open_watches() const;  // watch streams open now
  // Polls until open_watches() >= n.
  bool WaitForOpenWatches(int n, std::chrono::milliseconds timeout) const;

  // Objects as the API returns them.
  struct Port {
    std::string name;  // "": no name field
    int port = 0;
  };
  // An Endpoints object with one subset (no subset when both address lists are empty).
  static nlohmann::json Endpoints(const std::string& ns, const std::string& name,
                                  const std::vector<std::string>& ips,
                                  const std::vector<Port>& ports,
                                  const std::vector<std::string>& not_ready_ips = {},
                                  const std::map<std::string, std::string>& labels = {});
  struct SliceEndpoint {
    std::string ip;
    bool ready = true;
  };
  // An EndpointSlice of service `service` (label kubernetes.io/service-name).
  static nlohmann::json EndpointSlice(const std::string& ns, const std::string& name,
                                      const std::string& service,
                                      const std::vector<SliceEndpoint>& endpoints,
                                      const std::vector<Port>& ports,
                                      const std::map<std::string, std::string>& labels = {});

 private:
  struct Event {
    int64_t rv;
    Kind kind;
    std::shared_ptr<const nlohmann::json> object;  // also objects_' while current
    std::string line;  // the watch event's text, written once for every watch that sends it
  };
  struct Request;
  void AcceptLoop();
  void Serve(int fd);
  // false: close the connection.
  bool Handle(int fd, const Request& req);
  // `index`: the request's entry in seen_.
  bool ServeList(int fd, const Request& req, Kind kind, const std::string& ns, size_t index);
  bool ServeWatch(int fd, const Request& req, Kind kind, const std::string& ns, size_t index);
  int64_t Record(Kind kind, const std::string& type, nlohmann::json object);

  Options options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::vector<std::thread> threads_;
  std::vector<int> fds_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t rv_ = 100;
  int64_t compacted_rv_ = 0;
  uint64_t compactions_ = 0;
  // (kind, ns/name) -> the object, shared with its event in history_ (no copy per change).
  std::map<std::pair<Kind, std::string>, std::shared_ptr<const nlohmann::json>> objects_;
  std::vector<Event> history_;
  // Open watch (by its number among watches_) -> the last version it has sent (or skipped):
  // Compact() keeps the events after the lowest, so that no open watch loses one.
  std::map<int, int64_t> open_covered_;
  uint64_t expire_gen_ = 0, end_gen_ = 0, bookmark_gen_ = 0;
  std::string token_;
  int fail_status_ = 0;
  std::vector<Seen> seen_;
  int lists_ = 0, watches_ = 0;
};

}  // namespace turnpike::testing
