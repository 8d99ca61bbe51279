#include "plugins/limit_count/cluster_link.h"

#include <hiredis/hiredis.h>
#include <uv.h>

#include <charconv>

#include "plugins/limit_count/cluster_slot.h"

namespace turnpike::plugins::limit_count {
namespace {

// "<digits>" in full, else false.
template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

ClusterLink::ClusterLink(uv_loop_s* loop, const RedisConfig& config)
    : loop_(loop), config_(config), map_(kClusterSlots, kNoNode) {
  config_.sentinels.clear();
  config_.database = 0;  // a cluster has only database 0
  for (const RedisConfig::Address& seed : config.cluster_nodes) NodeAt(seed.host, seed.port);
}

ClusterLink::~ClusterLink() {
  closing_ = true;  // the links' last answers (calls failed as they close) go nowhere
  nodes_.clear();
}

int64_t ClusterLink::Now() const { return static_cast<int64_t>(uv_now(loop_)); }

size_t ClusterLink::connections() const {
  size_t n = 0;
  for (const Node& node : nodes_) n += node.link != nullptr ? 1 : 0;
  return n;
}

uint16_t ClusterLink::NodeAt(std::string_view host, int port) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].port == port && nodes_[i].host == host) return static_cast<uint16_t>(i);
  }
  if (nodes_.size() >= kNoNode) return kNoNode;
  nodes_.push_back(Node{std::string(host), port, nullptr});
  return static_cast<uint16_t>(nodes_.size() - 1);
}

RedisLink& ClusterLink::LinkOf(uint16_t node) {
  Node& n = nodes_[node];
  if (n.link == nullptr) {
    RedisConfig c = config_;
    c.host = n.host;
    c.port = n.port;
    n.link = std::make_unique<RedisLink>(loop_, c);
  }
  return *n.link;
}

uint16_t ClusterLink::Route(uint16_t slot) {
  uint16_t n = map_[slot];
  if (n != kNoNode) return n;
  if (fallback_ >= nodes_.size()) fallback_ = 0;
  return fallback_;
}

// ---------------------------------------------------------------- calls

uint32_t ClusterLink::NewCall(Waiter* waiter, uint64_t token) {
  int64_t now = Now();
  if (now - refreshed_at_ms_ >= kRefreshEveryMs) Refresh(kRefreshEveryMs);  // the first, too
  uint32_t id;
  if (free_.empty()) {
    id = static_cast<uint32_t>(calls_.size());
    calls_.emplace_back();
  } else {
    id = free_.back();
    free_.pop_back();
  }
  Call& c = calls_[id];
  c.waiter = waiter;
  c.token = token;
  c.deadline_ms = now + config_.timeout_ms;
  c.redirects = 0;
  return id;
}

void ClusterLink::IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost,
                                 Waiter* waiter, uint64_t token) {
  uint32_t id = NewCall(waiter, token);
  Call& c = calls_[id];
  c.step = Step::kFixed;
  c.key.assign(key);
  c.window_s = window_s;
  c.cost = cost;
  Send(id, Route(KeySlot(key)), /*asking=*/false);
}

void ClusterLink::IncrementSliding(const SlidingCall& call, Waiter* waiter, uint64_t token) {
  uint32_t id = NewCall(waiter, token);
  Call& c = calls_[id];
  c.step = Step::kReadPrevious;
  c.key.assign(call.current);
  c.previous.assign(call.previous);
  c.window_s = call.window_s;
  c.cost = call.cost;
  c.limit = call.limit;
  c.left_ms = call.left_ms;
  c.previous_count = 0;
  Send(id, Route(KeySlot(c.previous)), /*asking=*/false);
}

void ClusterLink::Send(uint32_t id, uint16_t node, bool asking) {
  Call& c = calls_[id];
  c.node = node;
  // The link may answer inside these calls (the node is unreachable): nothing of `c` is used
  // after them.
  switch (c.step) {
    case Step::kFixed:
      LinkOf(node).IncrementFixedBy(c.key, c.window_s, c.cost, this, id, c.deadline_ms, asking);
      break;
    case Step::kReadPrevious:
      LinkOf(node).Query({"GET", c.previous}, this, id, c.deadline_ms, asking);
      break;
    case Step::kSliding: {
      SlidingCall call{c.key, c.previous, c.window_s, c.left_ms, c.limit, c.cost};
      LinkOf(node).IncrementSlidingBy(call, c.previous_count, this, id, c.deadline_ms, asking);
      break;
    }
  }
}

std::string_view ClusterLink::KeyOf(const Call& c) {
  return c.step == Step::kReadPrevious ? std::string_view(c.previous) : std::string_view(c.key);
}

void ClusterLink::OnPrevious(uint32_t id, const redisReply* reply) {
  // GET answers nil (no such counter: 0) or the counter; anything else fails the call, as a
  // counter that is not a number fails APISIX's script.
  Call& c = calls_[id];
  int64_t previous = 0;
  if (reply->type == REDIS_REPLY_STRING) {
    if (!ParseNumber(std::string_view(reply->str, reply->len), &previous) || previous < 0) {
      Finish(id, nullptr, "the previous window's counter is not a number");
      return;
    }
  } else if (reply->type != REDIS_REPLY_NIL) {
    Finish(id, reply, {});  // an error: the waiter sees it
    return;
  }
  if (c.waiter == nullptr) {
    Finish(id, nullptr, {});  // forgotten: not worth counting
    return;
  }
  if (Now() >= c.deadline_ms) {
    // Sent now, it would time out at once and take its master's connection down with it.
    Finish(id, nullptr, "timeout");
    return;
  }
  c.previous_count = previous;
  c.step = Step::kSliding;
  c.redirects = 0;  // per command; the deadline covers both
  Send(id, Route(KeySlot(c.key)), /*asking=*/false);
}

void ClusterLink::Finish(uint32_t id, const redisReply* reply, std::string_view error) {
  Call& c = calls_[id];
  Waiter* waiter = c.waiter;
  uint64_t token = c.token;
  c.waiter = nullptr;
  free_.push_back(id);  // before the waiter, which may make a call that reuses the slot
  if (waiter != nullptr) waiter->OnRedisReply(reply, error, token);
}

void ClusterLink::Forget(const Waiter* waiter) {
  for (Call& c : calls_) {
    if (c.waiter == waiter) c.waiter = nullptr;
  }
}

void ClusterLink::OnRedisReply(const redisReply* reply, std::string_view error, uint64_t token) {
  if (closing_) return;
  if ((token & kTopologyToken) != 0) {
    auto asked = static_cast<uint16_t>(token & 0xffff);
    if (reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0) {
      OnSlots(reply, asked);
      return;
    }
    if (asked == fallback_) ++fallback_;  // it does not answer: unknown slots go elsewhere
    AskNextForSlots();
    return;
  }
  auto id = static_cast<uint32_t>(token);
  uint16_t from = calls_[id].node;
  if (reply == nullptr) {
    // The node failed (timeout, connection lost, unreachable). The call is not retried: it
    // may have counted. A refresh learns whether another node took the slots over.
    if (from == fallback_ && map_[KeySlot(KeyOf(calls_[id]))] == kNoNode) ++fallback_;
    Refresh(kMinRefreshGapMs);
    Finish(id, nullptr, error);
    return;
  }
  if (reply->type == REDIS_REPLY_ERROR && Redirect(id, from, reply)) return;
  if (calls_[id].step == Step::kReadPrevious) {
    OnPrevious(id, reply);
    return;
  }
  Finish(id, reply, {});
}

bool ClusterLink::Redirect(uint32_t id, uint16_t from, const redisReply* reply) {
  // "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" (an unknown host is empty).
  std::string_view e(reply->str, reply->len);
  bool ask = e.starts_with("ASK ");
  if (!ask && !e.starts_with("MOVED ")) return false;
  e.remove_prefix(ask ? 4 : 6);
  size_t space = e.find(' ');
  if (space == std::string_view::npos) return false;
  uint16_t slot = 0;
  int port = 0;
  std::string_view address = e.substr(space + 1);
  size_t colon = address.rfind(':');
  if (!ParseNumber(e.substr(0, space), &slot) || slot >= kClusterSlots ||
      colon == std::string_view::npos || !ParseNumber(address.substr(colon + 1), &port)) {
    return false;
  }
  std::string_view host = address.substr(0, colon);
  std::string from_host;
  if (host.empty()) {
    from_host = nodes_[from].host;
    host = from_host;
  }
  uint16_t node = NodeAt(host, port);
  if (!ask) {
    ++moved_;
    if (node != kNoNode) map_[slot] = node;
    Refresh(kMinRefreshGapMs);  // one slot moved: others may have, too
  } else {
    ++asked_;
  }
  Call& c = calls_[id];
  if (c.waiter == nullptr) {
    Finish(id, nullptr, {});  // forgotten: not worth following
  } else if (++c.redirects > kMaxRedirects) {
    Finish(id, nullptr, "too many cluster redirects");
  } else if (Now() >= c.deadline_ms) {
    Finish(id, nullptr, "timeout");
  } else if (node == kNoNode) {
    Finish(id, nullptr, "too many cluster nodes");
  } else {
    Send(id, node, ask);
  }
  return true;
}

// ---------------------------------------------------------------- the slot map

void ClusterLink::Refresh(int64_t gap_ms) {
  if (refreshing_ || closing_) return;
  int64_t now = Now();
  if (now - refreshed_at_ms_ < gap_ms) return;
  refreshed_at_ms_ = now;
  refreshing_ = true;
  refresh_asked_ = 0;
  AskNextForSlots();
}

void ClusterLink::AskNextForSlots() {
  if (refresh_asked_ >= nodes_.size()) {
    refreshing_ = false;  // nobody answered: the next failure or call tries again
    return;
  }
  ++refresh_asked_;
  auto node = static_cast<uint16_t>(refresh_next_++ % nodes_.size());
  // A node that cannot be reached answers inside this call, which asks the next one.
  LinkOf(node).Query({"CLUSTER", "SLOTS"}, this, kTopologyToken | node, Now() + config_.timeout_ms);
}

void ClusterLink::OnSlots(const redisReply* reply, uint16_t asked) {
  // [[start, end, [host, port, id, ...], replicas...], ...]; only masters are used.
  std::vector<uint16_t>& map = next_map_;  // its capacity is kept from the last refresh
  map.assign(kClusterSlots, kNoNode);
  size_t ranges = 0;
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* r = reply->element[i];
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3) continue;
    const redisReply* master = r->element[2];
    if (r->element[0]->type != REDIS_REPLY_INTEGER || r->element[1]->type != REDIS_REPLY_INTEGER ||
        master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
        master->element[0]->type != REDIS_REPLY_STRING ||
        master->element[1]->type != REDIS_REPLY_INTEGER) {
      continue;
    }
    long long start = r->element[0]->integer;
    long long end = r->element[1]->integer;
    std::string_view host(master->element[0]->str, master->element[0]->len);
    if (host == "?") continue;  // no endpoint known: its slots stay to redirects
    std::string asked_host;
    if (host.empty()) {  // "the node you asked"
      asked_host = nodes_[asked].host;
      host = asked_host;
    }
    uint16_t node = NodeAt(host, static_cast<int>(master->element[1]->integer));
    if (node == kNoNode || start < 0 || end >= kClusterSlots || start > end) continue;
    for (long long s = start; s <= end; ++s) map[static_cast<size_t>(s)] = node;
    ++ranges;
  }
  if (ranges == 0) {  // a node without slots (not joined yet): another may know
    AskNextForSlots();
    return;
  }
  map_.swap(map);
  fallback_ = asked;
  refreshing_ = false;
  ++refreshes_;
}

}  // namespace turnpike::plugins::limit_count
