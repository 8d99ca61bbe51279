#include "plugins/limit_count/redis_link.h"

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <initializer_list>

namespace turnpike::plugins::limit_count {
namespace {

// The fixed window, with the semantics of APISIX's limit-count script, so that both
// gateways on one Redis share one count per key: a key without a TTL starts a window (set
// to the cost, expiring after the window); else the cost is added. Answers the count in the
// window and the milliseconds left of it.
constexpr std::string_view kFixedScript =
    "local ttl = redis.call('pttl', KEYS[1])\n"
    "if ttl < 0 then\n"
    "  redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[1])\n"
    "  return {tonumber(ARGV[2]), tonumber(ARGV[1]) * 1000}\n"
    "end\n"
    "return {redis.call('incrby', KEYS[1], ARGV[2]), ttl}\n";

// The sliding window, with the semantics and data of APISIX's sliding-window limiter
// (RedisStore::IncrementSliding): ARGV = cost, limit, window in seconds, milliseconds left
// of the current window, and on a cluster the previous window's count (KEYS[1] only);
// on one server KEYS[2] is the previous window's counter, read here. Counters are plain
// integers under "<key>.<window id>.counter", the current one set with EX of two windows.
constexpr std::string_view kSlidingScript =
    "local cost = tonumber(ARGV[1])\n"
    "local limit = tonumber(ARGV[2])\n"
    "local window_s = tonumber(ARGV[3])\n"
    "local left_ms = tonumber(ARGV[4])\n"
    "local last\n"
    "if #KEYS > 1 then\n"
    "  last = tonumber(redis.call('get', KEYS[2]) or 0)\n"
    "else\n"
    "  last = tonumber(ARGV[5])\n"
    "end\n"
    "if last > limit then last = limit end\n"
    "local ttl = redis.call('pttl', KEYS[1])\n"
    "local count = 0\n"
    "if ttl >= 0 then count = tonumber(redis.call('get', KEYS[1]) or 0) end\n"
    "if count >= limit or last * left_ms / (window_s * 1000) + count >= limit then\n"
    "  return {0, count, last}\n"
    "end\n"
    "if ttl < 0 then\n"
    "  redis.call('set', KEYS[1], cost, 'EX', window_s * 2)\n"
    "  return {1, cost, last}\n"
    "end\n"
    "return {1, redis.call('incrby', KEYS[1], cost), last}\n";

constexpr std::array<std::string_view, 2> kScripts = {kFixedScript, kSlidingScript};

constexpr int64_t kMinBackoffMs = 100;
constexpr int64_t kMaxBackoffMs = 5000;

// `v` in decimal, in `buf`.
std::string_view Decimal(uint64_t v, std::array<char, 24>* buf) {
  auto [p, ec] = std::to_chars(buf->data(), buf->data() + buf->size(), v);
  return std::string_view(buf->data(), static_cast<size_t>(p - buf->data()));
}

// hiredis's argv call, from views (nothing is copied before hiredis formats the command).
// False when hiredis refused it (the context is failing).
bool Command(redisAsyncContext* c, redisCallbackFn* fn, void* privdata,
             std::initializer_list<std::string_view> args) {
  constexpr size_t kMaxArgs = 10;
  const char* argv[kMaxArgs];
  size_t lens[kMaxArgs];
  size_t n = 0;
  for (std::string_view a : args) {
    argv[n] = a.data();
    lens[n] = a.size();
    ++n;
  }
  return redisAsyncCommandArgv(c, fn, privdata, static_cast<int>(n), argv, lens) == REDIS_OK;
}

}  // namespace

RedisLink::RedisLink(uv_loop_s* loop, const RedisConfig& config) : loop_(loop), config_(config) {
  timer_ = new uv_timer_t;
  uv_timer_init(loop_, timer_);
  timer_->data = this;
  ring_.resize(64);
}

RedisLink::~RedisLink() {
  Reset("limit-count is shutting down");
  uv_timer_stop(timer_);
  timer_->data = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(timer_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
}

// ---------------------------------------------------------------- the ring of calls

void RedisLink::Push(Pending p) {
  if (count_ == ring_.size()) {  // grow, keeping the order
    std::vector<Pending> bigger(ring_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(bigger);
    head_ = 0;
  }
  int64_t due = p.deadline_ms;
  ring_[(head_ + count_) % ring_.size()] = std::move(p);
  ++count_;
  ArmTimerFor(due);
}

RedisLink::Pending RedisLink::Pop() {
  Pending p = std::move(ring_[head_]);
  head_ = (head_ + 1) % ring_.size();
  --count_;
  return p;
}

// Answers do not stop the timer: it may fire before the earliest deadline left, and then
// re-arms for it. A reply costs no timer call; a wake-up costs a scan of the calls in flight.
void RedisLink::ArmTimerFor(int64_t due) {
  if (due >= timer_due_) return;
  timer_due_ = due;
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  uv_timer_start(timer_, OnTimer, static_cast<uint64_t>(std::max<int64_t>(0, due - now)), 0);
}

void RedisLink::ArmTimer() {
  int64_t due = INT64_MAX;
  for (size_t i = 0; i < count_; ++i) {
    due = std::min(due, ring_[(head_ + i) % ring_.size()].deadline_ms);
  }
  if (sentinel_ != nullptr) due = std::min(due, sentinel_deadline_ms_);
  uv_timer_stop(timer_);
  timer_due_ = INT64_MAX;
  if (due != INT64_MAX) ArmTimerFor(due);
}

void RedisLink::OnTimer(uv_timer_t* t) {
  auto* self = static_cast<RedisLink*>(t->data);
  if (self == nullptr) return;
  self->timer_due_ = INT64_MAX;
  int64_t now = static_cast<int64_t>(uv_now(self->loop_));
  if (self->sentinel_ != nullptr && self->sentinel_deadline_ms_ <= now) {
    self->DropSentinel();
    self->AskSentinel();  // the next one, or give up for this round
    if (self->sentinel_ == nullptr && self->ctx_ == nullptr) return;
  }
  for (size_t i = 0; i < self->count_; ++i) {
    if (self->ring_[(self->head_ + i) % self->ring_.size()].deadline_ms <= now) {
      // An answer is late: the connection is not trusted any more (the answers after it
      // would be matched to the wrong calls if it came), so it goes, and every call in
      // flight fails.
      self->Reset("timeout");
      return;
    }
  }
  self->ArmTimer();
}

// ---------------------------------------------------------------- connection

RedisLink::Readiness RedisLink::EnsureConnected() {
  if (ctx_ != nullptr) return Readiness::kReady;
  if (sentinel_ != nullptr) return Readiness::kWaiting;  // asking for the master
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  if (now < retry_at_ms_) return Readiness::kDown;
  if (!config_.sentinels.empty()) {
    sentinels_asked_ = 0;
    AskSentinel();
    if (ctx_ != nullptr) return Readiness::kReady;
    return sentinel_ != nullptr ? Readiness::kWaiting : Readiness::kDown;
  }
  ConnectTo(config_.host, config_.port);
  return ctx_ != nullptr ? Readiness::kReady : Readiness::kDown;
}

void RedisLink::ConnectTo(const std::string& host, int port) {
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  redisAsyncContext* c = redisAsyncConnect(host.c_str(), port);
  if (c == nullptr || c->err != 0 || redisLibuvAttach(c, loop_) != REDIS_OK) {
    if (c != nullptr) redisAsyncFree(c);
    backoff_ms_ = std::min(kMaxBackoffMs, std::max(kMinBackoffMs, backoff_ms_ * 2));
    retry_at_ms_ = now + backoff_ms_;
    return;
  }
  c->data = this;
  redisAsyncSetConnectCallback(c, OnConnect);
  redisAsyncSetDisconnectCallback(c, OnDisconnect);
  ctx_ = c;
  for (std::string& sha : shas_) sha.clear();
  // Calls that waited for the address go after the link's own, in their order.
  std::vector<Pending> waiting;
  while (count_ > 0) waiting.push_back(Pop());
  // Queued by hiredis until the connect completes; their answers come first.
  if (!config_.password.empty()) {
    if (config_.username.empty()) {
      SendInternal({"AUTH", config_.password});
    } else {
      SendInternal({"AUTH", config_.username, config_.password});
    }
  }
  if (config_.database != 0 && ctx_ != nullptr) {
    std::array<char, 24> db;
    SendInternal({"SELECT", Decimal(static_cast<uint64_t>(config_.database), &db)});
  }
  for (size_t i = 0; i < kScripts.size() && ctx_ != nullptr; ++i) {
    SendInternal({"SCRIPT", "LOAD", kScripts[i]}, static_cast<Script>(i));
  }
  for (Pending& p : waiting) {
    if (ctx_ == nullptr) {
      if (p.waiter != nullptr) p.waiter->OnRedisReply(nullptr, "cannot send to Redis", p.token);
      continue;
    }
    Send(std::move(p), /*eval=*/true);
  }
}

void RedisLink::AskSentinel() {
  const size_t n = config_.sentinels.size();
  while (sentinels_asked_ < n) {
    const RedisConfig::Address& a = config_.sentinels[next_sentinel_ % n];
    ++next_sentinel_;
    ++sentinels_asked_;
    redisAsyncContext* c = redisAsyncConnect(a.host.c_str(), a.port);
    if (c == nullptr || c->err != 0 || redisLibuvAttach(c, loop_) != REDIS_OK) {
      if (c != nullptr) redisAsyncFree(c);
      continue;
    }
    c->data = this;
    sentinel_ = c;
    sentinel_deadline_ms_ = static_cast<int64_t>(uv_now(loop_)) + config_.connect_timeout_ms;
    ArmTimerFor(sentinel_deadline_ms_);
    if (!config_.sentinel_password.empty()) {  // its answer is not read: the next one says
      if (config_.sentinel_username.empty()) {
        Command(c, nullptr, nullptr, {"AUTH", config_.sentinel_password});
      } else {
        Command(c, nullptr, nullptr,
                {"AUTH", config_.sentinel_username, config_.sentinel_password});
      }
    }
    Command(c, OnSentinelReply, this, {"SENTINEL", "get-master-addr-by-name", config_.master_name});
    return;
  }
  // No sentinel answered this round: what waits fails, and the next round waits a back-off.
  Reset("no sentinel answered for master " + config_.master_name);
}

void RedisLink::DropSentinel() {
  if (sentinel_ == nullptr) return;
  redisAsyncContext* c = sentinel_;
  sentinel_ = nullptr;
  c->data = nullptr;
  redisAsyncFree(c);  // its callback sees data == nullptr and does nothing
}

void RedisLink::OnSentinelReply(redisAsyncContext* c, void* r, void* privdata) {
  auto* self = static_cast<RedisLink*>(privdata);
  if (c->data == nullptr || self->sentinel_ != c) return;
  auto* reply = static_cast<redisReply*>(r);
  std::string host;
  int port = 0;
  if (reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
      reply->element[0]->type == REDIS_REPLY_STRING &&
      reply->element[1]->type == REDIS_REPLY_STRING) {
    host.assign(reply->element[0]->str, reply->element[0]->len);
    std::string_view p(reply->element[1]->str, reply->element[1]->len);
    std::from_chars(p.data(), p.data() + p.size(), port);
  }
  // The sentinel's connection is not kept: it is asked again only after a failure.
  self->sentinel_ = nullptr;
  c->data = nullptr;
  redisAsyncDisconnect(c);
  if (host.empty() || port <= 0) {
    self->AskSentinel();  // this one does not know the master: the next
    return;
  }
  self->ConnectTo(host, port);
  if (self->ctx_ == nullptr) self->Reset("cannot connect to master " + host);
  self->ArmTimer();
}

void RedisLink::OnConnect(const redisAsyncContext* c, int status) {
  auto* self = static_cast<RedisLink*>(c->data);
  if (self == nullptr || self->ctx_ != c) return;
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback; the calls queued on it fail here.
    self->ctx_ = nullptr;
    self->Reset(c->errstr[0] != '\0' ? c->errstr : "connect failed");
    return;
  }
  self->backoff_ms_ = 0;
}

void RedisLink::OnDisconnect(const redisAsyncContext* c, int /*status*/) {
  auto* self = static_cast<RedisLink*>(c->data);
  if (self == nullptr || self->ctx_ != c) return;
  self->ctx_ = nullptr;  // hiredis frees it
  self->Reset("connection lost");
}

void RedisLink::Reset(std::string_view error) {
  DropSentinel();
  if (ctx_ != nullptr) {
    redisAsyncContext* c = ctx_;
    ctx_ = nullptr;
    c->data = nullptr;
    redisAsyncFree(c);  // its callbacks see data == nullptr and do nothing
  }
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  backoff_ms_ = std::min(kMaxBackoffMs, std::max(kMinBackoffMs, backoff_ms_ * 2));
  retry_at_ms_ = now + backoff_ms_;
  while (count_ > 0) {
    Pending p = Pop();
    if (p.waiter != nullptr) p.waiter->OnRedisReply(nullptr, error, p.token);
  }
  uv_timer_stop(timer_);
  timer_due_ = INT64_MAX;
}

// ---------------------------------------------------------------- calls

void RedisLink::SendInternal(std::initializer_list<std::string_view> args, Script loads) {
  Pending p;
  p.kind = Kind::kInternal;
  p.script = loads;
  p.sent = true;
  p.deadline_ms = static_cast<int64_t>(uv_now(loop_)) + config_.timeout_ms;
  if (!Command(ctx_, OnReply, this, args)) {
    Reset("cannot send to Redis");
    return;
  }
  Push(std::move(p));
}

void RedisLink::IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost,
                               Waiter* waiter, uint64_t token) {
  IncrementFixedBy(key, window_s, cost, waiter, token, 0, /*asking=*/false);
}

void RedisLink::IncrementFixedBy(std::string_view key, uint64_t window_s, uint64_t cost,
                                 Waiter* waiter, uint64_t token, int64_t deadline_ms, bool asking) {
  Pending p;
  p.script = Script::kFixed;
  p.key.assign(key);
  p.window_s = window_s;
  p.cost = cost;
  Submit(std::move(p), waiter, token, deadline_ms, asking);
}

void RedisLink::IncrementSliding(const SlidingCall& call, Waiter* waiter, uint64_t token) {
  IncrementSlidingBy(call, -1, waiter, token, 0, /*asking=*/false);
}

void RedisLink::IncrementSlidingBy(const SlidingCall& call, int64_t previous_count, Waiter* waiter,
                                   uint64_t token, int64_t deadline_ms, bool asking) {
  Pending p;
  p.script = Script::kSliding;
  p.key.assign(call.current);
  if (previous_count < 0) p.previous.assign(call.previous);
  p.previous_count = previous_count;
  p.window_s = call.window_s;
  p.cost = call.cost;
  p.limit = call.limit;
  p.left_ms = call.left_ms;
  Submit(std::move(p), waiter, token, deadline_ms, asking);
}

void RedisLink::Submit(Pending p, Waiter* waiter, uint64_t token, int64_t deadline_ms,
                       bool asking) {
  Readiness r = EnsureConnected();
  if (r == Readiness::kDown) {
    waiter->OnRedisReply(nullptr, "Redis unreachable", token);
    return;
  }
  p.waiter = waiter;
  p.token = token;
  p.deadline_ms =
      deadline_ms != 0 ? deadline_ms : static_cast<int64_t>(uv_now(loop_)) + config_.timeout_ms;
  if (r == Readiness::kWaiting) {
    Push(std::move(p));  // sent once the master's address is known (ConnectTo)
    return;
  }
  if (asking) {
    // Valid for the next command on this connection only: hiredis keeps the two together.
    SendInternal({"ASKING"});
    if (ctx_ == nullptr) {
      waiter->OnRedisReply(nullptr, "cannot send to Redis", token);
      return;
    }
  }
  bool eval = shas_[static_cast<size_t>(p.script)].empty();
  Send(std::move(p), eval);
}

void RedisLink::Query(std::initializer_list<std::string_view> args, Waiter* waiter, uint64_t token,
                      int64_t deadline_ms, bool asking) {
  if (EnsureConnected() != Readiness::kReady) {
    waiter->OnRedisReply(nullptr, "Redis unreachable", token);
    return;
  }
  if (asking) {
    SendInternal({"ASKING"});
    if (ctx_ == nullptr) {
      waiter->OnRedisReply(nullptr, "cannot send to Redis", token);
      return;
    }
  }
  Pending p;
  p.kind = Kind::kQuery;
  p.sent = true;
  p.waiter = waiter;
  p.token = token;
  p.deadline_ms = deadline_ms;
  if (!Command(ctx_, OnReply, this, args)) {
    Reset("cannot send to Redis");
    waiter->OnRedisReply(nullptr, "cannot send to Redis", token);
    return;
  }
  Push(std::move(p));
}

void RedisLink::Send(Pending p, bool eval) {
  std::array<char, 24> window;
  std::array<char, 24> cost;
  p.sent = true;
  auto script = static_cast<size_t>(p.script);
  std::string_view body = eval ? kScripts[script] : std::string_view(shas_[script]);
  bool sent;
  if (p.script == Script::kFixed) {
    sent = Command(ctx_, OnReply, this,
                   {eval ? "EVAL" : "EVALSHA", body, "1", p.key, Decimal(p.window_s, &window),
                    Decimal(p.cost, &cost)});
  } else {
    std::array<char, 24> limit;
    std::array<char, 24> left;
    std::array<char, 24> previous;
    if (p.previous_count < 0) {  // one server: both counters in the script
      sent = Command(
          ctx_, OnReply, this,
          {eval ? "EVAL" : "EVALSHA", body, "2", p.key, p.previous, Decimal(p.cost, &cost),
           Decimal(p.limit, &limit), Decimal(p.window_s, &window), Decimal(p.left_ms, &left)});
    } else {  // a cluster: the previous count was read from its own slot
      sent = Command(
          ctx_, OnReply, this,
          {eval ? "EVAL" : "EVALSHA", body, "1", p.key, Decimal(p.cost, &cost),
           Decimal(p.limit, &limit), Decimal(p.window_s, &window), Decimal(p.left_ms, &left),
           Decimal(static_cast<uint64_t>(p.previous_count), &previous)});
    }
  }
  if (!sent) {
    Waiter* w = p.waiter;
    uint64_t token = p.token;
    Reset("cannot send to Redis");
    if (w != nullptr) w->OnRedisReply(nullptr, "cannot send to Redis", token);
    return;
  }
  Push(std::move(p));
}

void RedisLink::OnReply(redisAsyncContext* c, void* r, void* privdata) {
  auto* self = static_cast<RedisLink*>(privdata);
  if (c->data == nullptr || self->ctx_ != c || self->count_ == 0) return;  // reset already
  if (!self->ring_[self->head_].sent) return;  // cannot happen: unsent calls follow sent ones
  auto* reply = static_cast<redisReply*>(r);
  Pending p = self->Pop();
  if (p.kind == Kind::kInternal) {
    // The link's own calls: SCRIPT LOAD gives the SHA for EVALSHA; a failed AUTH, SELECT or
    // ASKING leaves the connection unusable.
    if (reply == nullptr) return;
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string error(reply->str, reply->len);
      self->Reset(error);
      return;
    }
    if (reply->type == REDIS_REPLY_STRING && reply->len == 40) {
      self->shas_[static_cast<size_t>(p.script)].assign(reply->str, reply->len);
    }
    return;
  }
  if (p.waiter == nullptr) return;  // forgotten
  if (reply == nullptr) {
    p.waiter->OnRedisReply(nullptr, "connection lost", p.token);
    return;
  }
  if (p.kind == Kind::kScript && reply->type == REDIS_REPLY_ERROR &&
      std::string_view(reply->str, reply->len).starts_with("NOSCRIPT")) {
    // The server lost the script (SCRIPT FLUSH, a restart behind a proxy): send it whole.
    auto script = static_cast<size_t>(p.script);
    self->shas_[script].clear();
    self->SendInternal({"SCRIPT", "LOAD", kScripts[script]}, p.script);
    if (self->ctx_ != nullptr) self->Send(std::move(p), /*eval=*/true);
    return;
  }
  p.waiter->OnRedisReply(reply, {}, p.token);
}

void RedisLink::Forget(const Waiter* waiter) {
  for (size_t i = 0; i < count_; ++i) {
    Pending& p = ring_[(head_ + i) % ring_.size()];
    if (p.waiter == waiter) p.waiter = nullptr;
  }
}

}  // namespace turnpike::plugins::limit_count
