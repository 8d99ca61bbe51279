#include "discovery/kubernetes_informer.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "base/courtesy.h"
#include "base/strings.h"
#include "discovery/ares_resolver.h"
#include "discovery/json_answer.h"

namespace turnpike::discovery {
namespace {

// A watch stream line longer than this is not an event we can use: fail the watch.
constexpr size_t kMaxEventBytes = 64u << 20;
constexpr uint64_t kMaxListBytes = 256u << 20;  // one list page
// A watch that ends (or a 410 that follows another) sooner than this waits retry_min_ms.
constexpr uint64_t kQuickMs = 1000;

// The resourceVersion of an object (or of a list's metadata).
std::string_view ResourceVersion(simdjson::dom::element obj) {
  simdjson::dom::element md;
  return JsonMember(obj, "metadata", &md) ? JsonStringMember(md, "resourceVersion")
                                          : std::string_view();
}

// The `code` of a Status object, 0 when absent.
int64_t StatusCode(simdjson::dom::element obj) {
  int64_t code = 0;
  return obj["code"].get_int64().get(code) == simdjson::SUCCESS ? code : 0;
}

std::string Snippet(std::string_view body) {
  std::string s(body.substr(0, 200));
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

std::string UrlEncodeComponent(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

KubeInformer::KubeInformer(const KubernetesClusterConfig& config, Callbacks callbacks)
    : config_(config), cb_(std::move(callbacks)) {
  if (config_.watch_endpoint_slices) {
    path_ = "/apis/discovery.k8s.io/v1/endpointslices";
    list_kind_ = "EndpointSliceList";
  } else {
    path_ = "/api/v1/endpoints";
    list_kind_ = "EndpointsList";
  }
  where_ = "discovery kubernetes";
  if (!config_.id.empty()) where_ += "[" + config_.id + "]";
  where_ += config_.watch_endpoint_slices ? " endpointslices" : " endpoints";
}

KubeInformer::~KubeInformer() = default;

void KubeInformer::Start(uv_loop_t* loop) {
  loop_ = loop;
  client_ = std::make_unique<http_client::Client>(loop);
  timer_ = new uv_timer_t;
  uv_timer_init(loop, timer_);
  timer_->data = this;
  have_origin_ = http_client::Origin::FromIp(config_.host, config_.port, &origin_);
  if (!have_origin_) {
    resolver_ = std::make_unique<AresResolver>(loop);
    if (Status s = resolver_->Start(); !s.ok()) {
      spdlog::error("{}: {}; {} cannot be resolved", where_, s.message(), config_.host);
    }
  }
  step_ = Step::kRetryList;
  Arm(0);
}

void KubeInformer::Stop() {
  if (step_ == Step::kStopped) return;
  step_ = Step::kStopped;
  request_.Cancel();
  if (resolver_) {
    if (lookup_ != 0) resolver_->Cancel(lookup_);
    resolver_->Stop();
  }
  if (client_) client_->Close();
  if (timer_ != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    timer_ = nullptr;
  }
}

const char* KubeInformer::state() const {
  switch (step_) {
    case Step::kIdle:
      return "idle";
    case Step::kResolving:
      return "resolving";
    case Step::kListing:
      return "listing";
    case Step::kWatching:
      return "watching";
    case Step::kRetryList:
      return "waiting to list";
    case Step::kRetryWatch:
      return "waiting to watch";
    case Step::kStopped:
      return "stopped";
  }
  return "?";
}

void KubeInformer::Arm(uint64_t ms) {
  if (timer_ != nullptr) uv_timer_start(timer_, &KubeInformer::OnTimer, ms, 0);  // not stopped
}

void KubeInformer::OnTimer(uv_timer_t* t) {
  auto* self = static_cast<KubeInformer*>(t->data);
  if (self->step_ == Step::kRetryList) {
    self->BeginList();
  } else if (self->step_ == Step::kRetryWatch) {
    self->BeginWatch();
  }
}

void KubeInformer::Fail(Step retry, const std::string& why) {
  ++stats_.failures;
  request_.Cancel();
  backoff_ms_ =
      backoff_ms_ == 0 ? config_.retry_min_ms : std::min(backoff_ms_ * 2, config_.retry_max_ms);
  if (!failing_) {
    spdlog::error("{}: {}; retrying every {} ms at most, keeping the nodes known so far", where_,
                  why, config_.retry_max_ms);
  } else {
    spdlog::debug("{}: {}", where_, why);
  }
  failing_ = true;
  step_ = retry;
  Arm(backoff_ms_);
}

bool KubeInformer::Prepare(http_client::Request* req) {
  std::string token = config_.token;
  if (!config_.token_file.empty()) {
    // A few hundred bytes from a local file (a mounted secret): read as APISIX does, before
    // each request, so a rotated token is used from the next request on.
    std::ifstream in(config_.token_file, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    token = TrimToken(s.str());
  }
  req->headers.emplace_back("Authorization", "Bearer " + token);
  req->headers.emplace_back("Accept", "application/json");
  req->host = config_.host + ":" + std::to_string(config_.port);
  req->connect_timeout = 2;  // APISIX's watch timeouts: 2 s connect, 3 s send
  req->send_timeout = 3;
  return true;
}

std::string KubeInformer::Selectors() const {
  std::string q;
  if (!config_.label_selector.empty()) {
    q += "&labelSelector=" + UrlEncodeComponent(config_.label_selector);
  }
  if (config_.namespace_filter == NamespaceFilter::kEqual) {
    q += "&fieldSelector=" + UrlEncodeComponent("metadata.namespace=" + config_.namespace_value);
  } else if (config_.namespace_filter == NamespaceFilter::kNotEqual) {
    q += "&fieldSelector=" + UrlEncodeComponent("metadata.namespace!=" + config_.namespace_value);
  }
  return q;
}

void KubeInformer::BeginList() {
  continue_.clear();
  items_.clear();
  page_docs_.clear();
  if (resolver_ != nullptr) {
    // A host name: look it up again before each list (the address may move).
    step_ = Step::kResolving;
    lookup_ = resolver_->Resolve(config_.host, [this](const Resolution& r) {
      lookup_ = 0;
      if (step_ != Step::kResolving) return;
      if (!r.ok) {
        Fail(Step::kRetryList, "cannot resolve " + config_.host + ": " + r.error);
        return;
      }
      origin_ = http_client::Origin();
      std::memcpy(&origin_.addr, &r.addr, r.addr_len);
      origin_.len = r.addr_len;
      auto port = htons(static_cast<uint16_t>(config_.port));
      if (origin_.addr.ss_family == AF_INET6) {
        reinterpret_cast<sockaddr_in6*>(&origin_.addr)->sin6_port = port;
      } else {
        reinterpret_cast<sockaddr_in*>(&origin_.addr)->sin_port = port;
      }
      have_origin_ = true;
      step_ = Step::kListing;
      ListPage();
    });
    return;
  }
  step_ = Step::kListing;
  ListPage();
}

void KubeInformer::ListPage() {
  http_client::Request req;
  if (!Prepare(&req)) {
    Fail(Step::kRetryList, "cannot read client.token_file " + config_.token_file);
    return;
  }
  req.target = path_ + "?limit=" + std::to_string(config_.list_limit);
  if (!continue_.empty()) req.target += "&continue=" + UrlEncodeComponent(continue_);
  req.target += Selectors();
  req.read_timeout = 60;
  req.max_body_size = kMaxListBytes;
  request_ = client_->Fetch(origin_, std::move(req),
                            [this](http_client::Result r) { OnListDone(std::move(r)); });
}

void KubeInformer::OnListDone(http_client::Result r) {
  base::IdleScope idle;  // the pages' parse, and the provider's and the Directory's work after
  if (!r.ok()) {
    Fail(Step::kRetryList, std::string("list: ") + std::string(http_client::ErrorName(r.error)));
    return;
  }
  const http_client::Response& resp = r.response;
  if (resp.status == 410 && !continue_.empty()) {
    // The continue token expired while paging: start the list again.
    ++stats_.gone;
    spdlog::info("{}: list continue token expired (410), listing again", where_);
    BeginList();
    return;
  }
  if (resp.status != 200) {
    Fail(Step::kRetryList, "list: HTTP " + std::to_string(resp.status) + " " + Snippet(resp.body));
    return;
  }
  auto page = std::make_unique<simdjson::dom::document>();
  simdjson::dom::element doc;
  if (parser_.parse_into_document(*page, resp.body.data(), resp.body.size()).get(doc) !=
          simdjson::SUCCESS ||
      !doc.is_object() || JsonStringMember(doc, "kind") != list_kind_) {
    Fail(Step::kRetryList,
         "list: unexpected body, not a " + list_kind_ + ": " + Snippet(resp.body));
    return;
  }
  ++stats_.pages;
  if (simdjson::dom::array items; doc["items"].get_array().get(items) == simdjson::SUCCESS) {
    for (simdjson::dom::element item : items) items_.push_back(item);
  }
  page_docs_.push_back(std::move(page));  // the items point into it
  std::string rv(ResourceVersion(doc));
  std::string next;
  if (simdjson::dom::element md; JsonMember(doc, "metadata", &md)) {
    next = JsonStringMember(md, "continue");
  }
  if (!next.empty()) {
    continue_ = std::move(next);
    ListPage();
    return;
  }
  rv_ = std::move(rv);
  continue_.clear();
  ++stats_.lists;
  backoff_ms_ = 0;
  if (failing_) spdlog::info("{}: listed again ({} objects)", where_, items_.size());
  failing_ = false;
  // The callback may Stop() (or a later list replace these): it gets the items from here.
  std::vector<simdjson::dom::element> items = std::move(items_);
  std::vector<std::unique_ptr<simdjson::dom::document>> docs = std::move(page_docs_);
  items_.clear();
  page_docs_.clear();
  BeginWatch();  // before the callback: it may Stop()
  if (cb_.on_list) cb_.on_list(items);
}

void KubeInformer::BeginWatch() {
  if (step_ == Step::kStopped) return;
  step_ = Step::kWatching;
  line_.clear();
  stream_ended_ = false;
  watch_status_ = 0;
  watch_started_ms_ = uv_now(loop_);
  http_client::Request req;
  if (!Prepare(&req)) {
    Fail(Step::kRetryWatch, "cannot read client.token_file " + config_.token_file);
    return;
  }
  int timeout_s = config_.watch_timeout_s;
  if (timeout_s <= 0) {
    static thread_local std::minstd_rand rng(std::random_device{}());
    timeout_s = 1800 + std::uniform_int_distribution<int>(9, 999)(rng);
  }
  req.target =
      path_ + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(timeout_s);
  if (!rv_.empty()) req.target += "&resourceVersion=" + UrlEncodeComponent(rv_);
  req.target += Selectors();
  req.read_timeout = timeout_s + 120;
  http_client::Callbacks cbs;
  cbs.on_head = [this](const http_client::Response& head) { OnWatchHead(head); };
  cbs.on_body = [this](std::string_view piece) { OnWatchBody(piece); };
  cbs.on_done = [this](http_client::Result r) { OnWatchDone(std::move(r)); };
  request_ = client_->Fetch(origin_, std::move(req), std::move(cbs));
}

void KubeInformer::OnWatchHead(const http_client::Response& head) {
  watch_status_ = head.status;
  if (head.status == 200) {
    ++stats_.watches;
    backoff_ms_ = 0;
    if (failing_) spdlog::info("{}: watching again", where_);
    failing_ = false;
  }
}

void KubeInformer::OnWatchBody(std::string_view piece) {
  base::IdleScope idle;  // the events' parse, and the provider's and the Directory's work after
  if (stream_ended_) return;
  if (watch_status_ != 200) {
    // Not a stream of events but a Status object: keep its start for the log.
    if (line_.size() < 512) line_.append(piece.substr(0, 512 - line_.size()));
    return;
  }
  line_.append(piece);
  size_t start = 0;
  while (true) {
    size_t nl = line_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(line_.data() + start, nl - start);
    start = nl + 1;
    if (base::TrimWhitespace(line).empty()) continue;
    if (!HandleEvent(line)) return;  // the stream was dropped (relist or back-off)
  }
  line_.erase(0, start);
  if (line_.size() > kMaxEventBytes) {
    stream_ended_ = true;
    Fail(Step::kRetryWatch, "watch: an event over " + std::to_string(kMaxEventBytes) + " bytes");
  }
}

bool KubeInformer::HandleEvent(std::string_view line) {
  simdjson::dom::element ev;
  simdjson::dom::element obj;
  std::string_view type;
  if (parser_.parse(line.data(), line.size()).get(ev) != simdjson::SUCCESS ||
      (type = JsonStringMember(ev, "type")).empty() || ev["object"].get(obj) != simdjson::SUCCESS ||
      !obj.is_object()) {
    stream_ended_ = true;
    Fail(Step::kRetryWatch, "watch: unexpected event " + Snippet(line));
    return false;
  }
  if (type == "ERROR") {
    stream_ended_ = true;
    if (StatusCode(obj) == 410) {
      Relist();
    } else {
      Fail(Step::kRetryWatch, "watch: ERROR event " + Snippet(line));
    }
    return false;
  }
  if (std::string_view rv = ResourceVersion(obj); !rv.empty()) rv_ = rv;
  if (type == "BOOKMARK") {
    ++stats_.bookmarks;
    return true;
  }
  if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") return true;  // unknown: skip
  ++stats_.events;
  if (cb_.on_event) cb_.on_event(type, obj);
  return step_ == Step::kWatching;  // the callback may have stopped us
}

void KubeInformer::Relist() {
  ++stats_.gone;
  spdlog::info("{}: resourceVersion {} is gone (410), listing again", where_, rv_);
  request_.Cancel();
  rv_.clear();
  step_ = Step::kRetryList;
  // A server answering 410 to every fresh version would otherwise be relisted in a loop.
  uint64_t now = uv_now(loop_);
  bool again = last_gone_ms_ != 0 && now - last_gone_ms_ < kQuickMs;
  last_gone_ms_ = now;
  Arm(again ? config_.retry_min_ms : 0);
}

void KubeInformer::OnWatchDone(http_client::Result r) {
  if (step_ != Step::kWatching || stream_ended_) return;
  const http_client::Response& resp = r.response;
  if (resp.status == 410) {
    Relist();
    return;
  }
  if (resp.status != 0 && resp.status != 200) {
    Fail(Step::kRetryWatch, "watch: HTTP " + std::to_string(resp.status) + " " + Snippet(line_));
    return;
  }
  if (!r.ok()) {
    Fail(Step::kRetryWatch, std::string("watch: ") + std::string(http_client::ErrorName(r.error)));
    return;
  }
  // The server ended the watch (timeoutSeconds): watch again from where we are, at once
  // unless it ended so soon that watching again at once could spin.
  step_ = Step::kRetryWatch;
  Arm(uv_now(loop_) - watch_started_ms_ < kQuickMs ? config_.retry_min_ms : 0);
}

}  // namespace turnpike::discovery
