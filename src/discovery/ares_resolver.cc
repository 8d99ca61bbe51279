#include "discovery/ares_resolver.h"

#include <ares.h>
#include <arpa/nameser.h>
#include <sys/time.h>

#include <cstring>
#include <mutex>

namespace turnpike::discovery {

struct AresResolver::Channel {
  ares_channel channel = nullptr;
};

namespace {

void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { ares_library_init(ARES_LIB_INIT_ALL); });
}

bool EndsWithIgnoreCase(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  if (s.size() < n) return false;
  return strncasecmp(s.data() + s.size() - n, suffix, n) == 0;
}

}  // namespace

AresResolver::AresResolver(uv_loop_t* loop, Options options)
    : loop_(loop), options_(options), channel_(std::make_unique<Channel>()) {}

AresResolver::~AresResolver() {
  if (channel_->channel != nullptr) ares_destroy(channel_->channel);
}

bool AresResolver::IsSpecialInvalid(const std::string& host) {
  std::string h = host;
  if (!h.empty() && h.back() == '.') h.pop_back();  // absolute form
  return strcasecmp(h.c_str(), "invalid") == 0 || EndsWithIgnoreCase(h, ".invalid");
}

Status AresResolver::Start() {
  InitLibraryOnce();
  // The timers first: even without a channel, lookups must fail from the loop.
  uv_timer_init(loop_, &timeout_timer_);
  uv_timer_init(loop_, &defer_timer_);
  timeout_timer_.data = defer_timer_.data = this;
  handles_ = true;
  ares_options opts{};
  opts.timeout = options_.timeout_ms;
  opts.tries = options_.tries;
  opts.sock_state_cb = [](void* data, ares_socket_t fd, int readable, int writable) {
    static_cast<AresResolver*>(data)->OnSocketState(fd, readable != 0, writable != 0);
  };
  opts.sock_state_cb_data = this;
  int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB;
  std::string resolv_conf = options_.resolv_conf;
  if (!resolv_conf.empty()) {
    opts.resolvconf_path = resolv_conf.data();
    mask |= ARES_OPT_RESOLVCONF;
  }
  int rc = ares_init_options(&channel_->channel, &opts, mask);
  if (rc != ARES_SUCCESS) {
    channel_->channel = nullptr;
    return Status::Error(std::string("resolver: ") + ares_strerror(rc));
  }
  if (!options_.servers.empty()) {
    std::string csv;
    for (const std::string& server : options_.servers) {
      if (!csv.empty()) csv += ',';
      csv += server;
    }
    rc = ares_set_servers_ports_csv(channel_->channel, csv.c_str());
    if (rc != ARES_SUCCESS) {
      ares_destroy(channel_->channel);
      channel_->channel = nullptr;
      return Status::Error("resolver: servers \"" + csv + "\": " + ares_strerror(rc));
    }
  }
  return Status::Ok();
}

void AresResolver::Stop() {
  if (stopped_) return;
  stopped_ = true;
  pending_.clear();  // no callback runs from here on
  deferred_.clear();
  if (channel_->channel != nullptr) {
    // Fails every query (ARES_EDESTRUCTION, ignored: pending_ is empty) and reports every
    // socket closed, which closes its poll handle.
    ares_destroy(channel_->channel);
    channel_->channel = nullptr;
  }
  for (auto& [fd, poll] : polls_) {
    uv_close(reinterpret_cast<uv_handle_t*>(poll),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
  }
  polls_.clear();
  if (handles_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&timeout_timer_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&defer_timer_), nullptr);
  }
}

uint64_t AresResolver::Query(const std::string& name, int type, AnswerDone done) {
  uint64_t id = next_id_++;
  pending_.emplace(id, [done = std::move(done)](const Result& r) { done(r.answer); });
  if (stopped_ || !handles_) return id;  // stopped (or never started): no callback
  if (channel_->channel == nullptr) {
    Finish(id, Result{{}, Answer{ARES_ENOTINITIALIZED, {}}});
    return id;
  }
  auto* query = new QueryRef{this, id};
  ares_query(
      channel_->channel, name.c_str(), ns_c_in, type,
      [](void* arg, int status, int, unsigned char* abuf, int alen) {
        std::unique_ptr<QueryRef> q(static_cast<QueryRef*>(arg));
        if (status == ARES_EDESTRUCTION) return;  // Stop(): nobody waits any more
        Result r;
        r.answer.status = status;
        if (status == ARES_SUCCESS && abuf != nullptr && alen > 0) {
          r.answer.message.assign(abuf, abuf + alen);
        }
        q->self->Finish(q->id, std::move(r));
      },
      query);
  ArmTimeout();
  return id;
}

uint64_t AresResolver::Resolve(const std::string& host, Done done) {
  uint64_t id = next_id_++;
  pending_.emplace(id, [done = std::move(done)](const Result& r) { done(r.resolution); });
  if (stopped_ || !handles_) return id;  // stopped (or never started): no callback
  if (channel_->channel == nullptr) {
    Finish(id, Result{Resolution{false, "resolver not running", {}, 0, 0}, {}});
    return id;
  }
  if (IsSpecialInvalid(host)) {
    Finish(id, Result{Resolution{false, "Domain name not found", {}, 0, 0}, {}});
    return id;
  }
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  auto* query = new QueryRef{this, id};
  ares_getaddrinfo(
      channel_->channel, host.c_str(), nullptr, &hints,
      [](void* arg, int status, int, ares_addrinfo* res) {
        std::unique_ptr<QueryRef> q(static_cast<QueryRef*>(arg));
        if (status == ARES_EDESTRUCTION) {
          if (res != nullptr) ares_freeaddrinfo(res);
          return;  // Stop(): nobody waits any more
        }
        Resolution r;
        if (status == ARES_SUCCESS && res != nullptr && res->nodes != nullptr) {
          const ares_addrinfo_node* n = res->nodes;
          r.ok = true;
          r.addr_len = std::min<socklen_t>(n->ai_addrlen, sizeof(r.addr));
          std::memcpy(&r.addr, n->ai_addr, r.addr_len);
          r.ttl_seconds = n->ai_ttl > 0 ? static_cast<uint32_t>(n->ai_ttl) : 0;
        } else {
          r.error = ares_strerror(status == ARES_SUCCESS ? ARES_ENODATA : status);
        }
        if (res != nullptr) ares_freeaddrinfo(res);
        q->self->Finish(q->id, Result{std::move(r), {}});
      },
      query);
  ArmTimeout();
  return id;
}

void AresResolver::Cancel(uint64_t id) { pending_.erase(id); }

void AresResolver::Finish(uint64_t id, Result result) {
  if (stopped_ || pending_.find(id) == pending_.end()) return;
  deferred_.emplace_back(id, std::move(result));
  // Callbacks always come from the loop: never inside Resolve() (c-ares answers from the
  // hosts file synchronously) nor inside c-ares' own processing.
  uv_timer_start(
      &defer_timer_, [](uv_timer_t* t) { static_cast<AresResolver*>(t->data)->RunDeferred(); }, 0,
      0);
}

void AresResolver::RunDeferred() {
  std::vector<std::pair<uint64_t, Result>> ready;
  ready.swap(deferred_);
  for (auto& [id, result] : ready) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // cancelled meanwhile
    Callback done = std::move(it->second);
    pending_.erase(it);
    done(result);  // may Resolve, Cancel or Stop
    if (stopped_) return;
  }
}

void AresResolver::ArmTimeout() {
  if (stopped_ || channel_->channel == nullptr) return;
  timeval tv{};
  if (ares_timeout(channel_->channel, nullptr, &tv) == nullptr) {
    uv_timer_stop(&timeout_timer_);  // no query in flight
    return;
  }
  uint64_t ms = static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000;
  uv_timer_start(
      &timeout_timer_,
      [](uv_timer_t* t) {
        auto* self = static_cast<AresResolver*>(t->data);
        ares_process_fd(self->channel_->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        self->ArmTimeout();
      },
      ms, 0);
}

void AresResolver::OnSocketState(int fd, bool readable, bool writable) {
  auto it = polls_.find(fd);
  if (!readable && !writable) {
    if (it == polls_.end()) return;
    uv_close(reinterpret_cast<uv_handle_t*>(it->second),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
    polls_.erase(it);
    return;
  }
  if (stopped_) return;
  uv_poll_t* poll = nullptr;
  if (it == polls_.end()) {
    poll = new uv_poll_t;
    if (uv_poll_init_socket(loop_, poll, fd) != 0) {
      delete poll;
      return;
    }
    poll->data = this;
    polls_.emplace(fd, poll);
  } else {
    poll = it->second;
  }
  int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
  uv_poll_start(poll, events, [](uv_poll_t* p, int status, int ev) {
    auto* self = static_cast<AresResolver*>(p->data);
    int fd = -1;
    uv_fileno(reinterpret_cast<uv_handle_t*>(p), &fd);
    // An error on the socket: let c-ares read it and notice.
    bool r = status < 0 || (ev & UV_READABLE) != 0;
    bool w = status >= 0 && (ev & UV_WRITABLE) != 0;
    ares_process_fd(self->channel_->channel, r ? fd : ARES_SOCKET_BAD, w ? fd : ARES_SOCKET_BAD);
    self->ArmTimeout();
  });
}

}  // namespace turnpike::discovery
