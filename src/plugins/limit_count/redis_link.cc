#include "plugins/limit_count/redis_link.h"

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include <algorithm>
#include <charconv>

namespace turnpike::plugins::limit_count {
namespace {

// The fixed window, with the semantics of APISIX's limit-count script, so that both
// gateways on one Redis share one count per key: a key without a TTL starts a window (set
// to the cost, expiring after the window); else the cost is added. Answers the count in the
// window and the milliseconds left of it.
constexpr std::string_view kScript =
    "local ttl = redis.call('pttl', KEYS[1])\n"
    "if ttl < 0 then\n"
    "  redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[1])\n"
    "  return {tonumber(ARGV[2]), tonumber(ARGV[1]) * 1000}\n"
    "end\n"
    "return {redis.call('incrby', KEYS[1], ARGV[2]), ttl}\n";

constexpr int64_t kMinBackoffMs = 100;
constexpr int64_t kMaxBackoffMs = 5000;

std::string Decimal(uint64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, p);
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
  ring_[(head_ + count_) % ring_.size()] = std::move(p);
  if (++count_ == 1) ArmTimer();
}

RedisLink::Pending RedisLink::Pop() {
  Pending p = std::move(ring_[head_]);
  head_ = (head_ + 1) % ring_.size();
  --count_;
  return p;
}

void RedisLink::ArmTimer() {
  if (count_ == 0) {
    uv_timer_stop(timer_);
    return;
  }
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  int64_t wait = std::max<int64_t>(0, ring_[head_].deadline_ms - now);
  uv_timer_start(timer_, OnTimer, static_cast<uint64_t>(wait), 0);
}

void RedisLink::OnTimer(uv_timer_t* t) {
  auto* self = static_cast<RedisLink*>(t->data);
  if (self == nullptr || self->count_ == 0) return;
  if (self->ring_[self->head_].deadline_ms > static_cast<int64_t>(uv_now(self->loop_))) {
    self->ArmTimer();
    return;
  }
  // An answer is late: the connection is not trusted any more (the answers after it would be
  // matched to the wrong calls if it came), so it goes, and every call in flight fails.
  self->Reset("timeout");
}

// ---------------------------------------------------------------- connection

bool RedisLink::EnsureConnected() {
  if (ctx_ != nullptr) return true;
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  if (now < retry_at_ms_) return false;
  redisAsyncContext* c = redisAsyncConnect(config_.host.c_str(), config_.port);
  if (c == nullptr) return false;
  if (c->err != 0 || redisLibuvAttach(c, loop_) != REDIS_OK) {
    redisAsyncFree(c);
    backoff_ms_ = std::min(kMaxBackoffMs, std::max(kMinBackoffMs, backoff_ms_ * 2));
    retry_at_ms_ = now + backoff_ms_;
    return false;
  }
  c->data = this;
  redisAsyncSetConnectCallback(c, OnConnect);
  redisAsyncSetDisconnectCallback(c, OnDisconnect);
  ctx_ = c;
  sha_.clear();
  // Queued by hiredis until the connect completes; their answers come first.
  if (!config_.password.empty()) {
    if (config_.username.empty()) {
      SendInternal({"AUTH", config_.password});
    } else {
      SendInternal({"AUTH", config_.username, config_.password});
    }
  }
  if (config_.database != 0) SendInternal({"SELECT", Decimal(config_.database)});
  SendInternal({"SCRIPT", "LOAD", std::string(kScript)});
  return ctx_ != nullptr;
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
}

// ---------------------------------------------------------------- calls

void RedisLink::SendInternal(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  Pending p;
  p.internal = true;
  p.deadline_ms = static_cast<int64_t>(uv_now(loop_)) + config_.timeout_ms;
  if (redisAsyncCommandArgv(ctx_, OnReply, this, static_cast<int>(argv.size()), argv.data(),
                            lens.data()) != REDIS_OK) {
    Reset("cannot send to Redis");
    return;
  }
  Push(std::move(p));
}

void RedisLink::IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost,
                               Waiter* waiter, uint64_t token) {
  if (!EnsureConnected()) {
    waiter->OnRedisReply(nullptr, "Redis unreachable", token);
    return;
  }
  Pending p;
  p.waiter = waiter;
  p.token = token;
  p.deadline_ms = static_cast<int64_t>(uv_now(loop_)) + config_.timeout_ms;
  p.key.assign(key);
  p.window_s = window_s;
  p.cost = cost;
  Send(std::move(p), /*eval=*/sha_.empty());
}

void RedisLink::Send(Pending p, bool eval) {
  args_[0] = eval ? "EVAL" : "EVALSHA";
  args_[1] = eval ? std::string(kScript) : sha_;
  args_[2] = "1";
  args_[3] = p.key;
  args_[4] = Decimal(p.window_s);
  args_[5] = Decimal(p.cost);
  const char* argv[6];
  size_t lens[6];
  for (int i = 0; i < 6; ++i) {
    argv[i] = args_[i].data();
    lens[i] = args_[i].size();
  }
  if (redisAsyncCommandArgv(ctx_, OnReply, this, 6, argv, lens) != REDIS_OK) {
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
  auto* reply = static_cast<redisReply*>(r);
  Pending p = self->Pop();
  self->ArmTimer();
  if (p.internal) {
    // The link's own calls: SCRIPT LOAD gives the SHA for EVALSHA; a failed AUTH or SELECT
    // leaves the connection unusable.
    if (reply == nullptr) return;
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string error(reply->str, reply->len);
      self->Reset(error);
      return;
    }
    if (reply->type == REDIS_REPLY_STRING && reply->len == 40) {
      self->sha_.assign(reply->str, reply->len);
    }
    return;
  }
  if (p.waiter == nullptr) return;  // forgotten
  if (reply == nullptr) {
    p.waiter->OnRedisReply(nullptr, "connection lost", p.token);
    return;
  }
  if (reply->type == REDIS_REPLY_ERROR &&
      std::string_view(reply->str, reply->len).starts_with("NOSCRIPT")) {
    // The server lost the script (SCRIPT FLUSH, a restart behind a proxy): send it whole.
    self->sha_.clear();
    self->SendInternal({"SCRIPT", "LOAD", std::string(kScript)});
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

std::shared_ptr<RedisLink> RedisLinks::Get(int worker, uv_loop_s* loop, const RedisConfig& c) {
  std::string key = c.host + ":" + std::to_string(c.port) + "/" + std::to_string(c.database) + "/" +
                    c.username + "/" + c.password + "/" + std::to_string(c.timeout_ms);
  std::weak_ptr<RedisLink>& slot = by_worker_[static_cast<size_t>(worker)][key];
  std::shared_ptr<RedisLink> link = slot.lock();
  if (link == nullptr) {
    link = std::make_shared<RedisLink>(loop, c);
    slot = link;
  }
  return link;
}

}  // namespace turnpike::plugins::limit_count
