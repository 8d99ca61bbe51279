#include "plugins/limit_count/redis_link.h"

#include <errno.h>
#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <uv.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <initializer_list>
#include <new>

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

// hiredis's argv call on a sentinel's async connection, from views. False when hiredis
// refused it (the context is failing).
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

// RESP: "*<n>\r\n" then "$<len>\r\n<arg>\r\n" per argument.
void AppendCount(char kind, size_t n, std::string* out) {
  std::array<char, 24> digits;
  out->push_back(kind);
  out->append(Decimal(n, &digits));
  out->append("\r\n", 2);
}

void AppendArg(std::string_view arg, std::string* out) {
  AppendCount('$', arg.size(), out);
  out->append(arg);
  out->append("\r\n", 2);
}

}  // namespace

// ---------------------------------------------------------------- reply storage

void* RedisReplyStorage::Alloc(size_t size) {
  constexpr size_t kAlign = alignof(redisReply);
  size = (size + kAlign - 1) / kAlign * kAlign;
  while (block_ < blocks_.size()) {
    Block& b = blocks_[block_];
    if (b.size - used_ >= size) {
      void* p = b.bytes.get() + used_;
      used_ += size;
      std::memset(p, 0, size);
      return p;
    }
    ++block_;
    used_ = 0;
  }
  // No block left has room (a reply larger than any before: CLUSTER SLOTS of a big
  // cluster, a long error): one more block, kept.
  Block b;
  b.size = std::max(kBlockSize, size);
  b.bytes.reset(new unsigned char[b.size]);
  blocks_.push_back(std::move(b));
  block_ = blocks_.size() - 1;
  used_ = size;
  std::memset(blocks_.back().bytes.get(), 0, size);
  return blocks_.back().bytes.get();
}

namespace {

// The parser's object functions (hiredis read.h), building redisReply trees in the link's
// ReplyStorage (the read task's privdata): the same shapes hiredis's own functions build,
// strings NUL-terminated, nothing to free.
redisReply* NewObject(const redisReadTask* task, int type) {
  auto* storage = static_cast<RedisReplyStorage*>(task->privdata);
  auto* r = new (storage->Alloc(sizeof(redisReply))) redisReply{};
  r->type = type;
  if (task->parent != nullptr) {
    auto* parent = static_cast<redisReply*>(task->parent->obj);
    parent->element[task->idx] = r;
  }
  return r;
}

void* CreateString(const redisReadTask* task, char* str, size_t len) {
  redisReply* r = NewObject(task, task->type);
  auto* storage = static_cast<RedisReplyStorage*>(task->privdata);
  auto* copy = static_cast<char*>(storage->Alloc(len + 1));  // zeroed: NUL-terminated
  std::memcpy(copy, str, len);
  r->str = copy;
  r->len = len;
  return r;
}

void* CreateArray(const redisReadTask* task, int elements) {
  redisReply* r = NewObject(task, REDIS_REPLY_ARRAY);
  if (elements > 0) {
    auto* storage = static_cast<RedisReplyStorage*>(task->privdata);
    r->element = static_cast<redisReply**>(
        storage->Alloc(sizeof(redisReply*) * static_cast<size_t>(elements)));
  }
  r->elements = static_cast<size_t>(elements);
  return r;
}

void* CreateInteger(const redisReadTask* task, long long value) {
  redisReply* r = NewObject(task, REDIS_REPLY_INTEGER);
  r->integer = value;
  return r;
}

void* CreateNil(const redisReadTask* task) { return NewObject(task, REDIS_REPLY_NIL); }

void FreeObject(void* /*reply*/) {}  // the storage is reused

redisReplyObjectFunctions kStorageFunctions = {CreateString, CreateArray, CreateInteger, CreateNil,
                                               FreeObject};

// What the poll handle carries: the link while the connection is its own; the context is
// freed with the handle (uv_close's callback) once the link let it go.
struct PollData {
  RedisLink* link;
  redisContext* ctx;
};

}  // namespace

RedisLink::RedisLink(uv_loop_t* loop, const RedisConfig& config) : loop_(loop), config_(config) {
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

RedisLink::Pending& RedisLink::Reserve() {
  if (count_ == ring_.size()) {  // grow, keeping the order
    std::vector<Pending> bigger(ring_.size() * 2);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(bigger);
    head_ = 0;
  }
  return ring_[(head_ + count_) % ring_.size()];
}

void RedisLink::Commit(int64_t due) {
  ++count_;
  ArmTimerFor(due);
}

void RedisLink::PopFront() {
  head_ = (head_ + 1) % ring_.size();
  --count_;
}

RedisLink::ScriptCall RedisLink::ScriptOf(const Pending& p) {
  ScriptCall call;
  call.script = p.script;
  call.key = p.key;
  call.previous = p.previous;
  call.previous_count = p.previous_count;
  call.window_s = p.window_s;
  call.cost = p.cost;
  call.limit = p.limit;
  call.left_ms = p.left_ms;
  return call;
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
  redisContext* c = redisConnectNonBlock(host.c_str(), port);
  auto* poll = new uv_poll_t;
  if (c == nullptr || c->err != 0 || uv_poll_init(loop_, poll, c->fd) != 0) {
    delete poll;
    if (c != nullptr) redisFree(c);
    backoff_ms_ = std::min(kMaxBackoffMs, std::max(kMinBackoffMs, backoff_ms_ * 2));
    retry_at_ms_ = now + backoff_ms_;
    return;
  }
  c->reader->fn = &kStorageFunctions;
  c->reader->privdata = &replies_;
  poll->data = new PollData{this, c};
  ctx_ = c;
  poll_ = poll;
  connected_ = false;
  writing_ = false;
  out_.clear();
  out_sent_ = 0;
  replies_.Clear();
  WatchWrites();  // the connect completes when the socket is writable
  for (std::string& sha : shas_) sha.clear();
  // Calls that waited for the address go after the link's own, in their order.
  std::vector<Pending> waiting;
  while (count_ > 0) {
    waiting.push_back(std::move(ring_[head_]));
    PopFront();
  }
  // Written once the connect completes; their answers come first.
  if (!config_.password.empty()) {
    if (config_.username.empty()) {
      SendInternal({"AUTH", config_.password});
    } else {
      SendInternal({"AUTH", config_.username, config_.password});
    }
  }
  if (config_.database != 0) {
    std::array<char, 24> db;
    SendInternal({"SELECT", Decimal(static_cast<uint64_t>(config_.database), &db)});
  }
  for (size_t i = 0; i < kScripts.size(); ++i) {
    SendInternal({"SCRIPT", "LOAD", kScripts[i]}, static_cast<Script>(i));
  }
  for (Pending& p : waiting) SendScript(ScriptOf(p), p.waiter, p.token, p.deadline_ms, true);
}

void RedisLink::CloseConnection() {
  if (ctx_ == nullptr) return;
  // The context is freed with the handle, on a later turn of the loop: a reply being handled
  // now (this may run inside Dispatch) keeps its parser until then.
  static_cast<PollData*>(poll_->data)->link = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(poll_), [](uv_handle_t* h) {
    auto* data = static_cast<PollData*>(h->data);
    redisFree(data->ctx);  // closes the socket (uv_close stopped watching it)
    delete data;
    delete reinterpret_cast<uv_poll_t*>(h);
  });
  ctx_ = nullptr;
  poll_ = nullptr;
  connected_ = false;
  writing_ = false;
  out_.clear();
  out_sent_ = 0;
}

void RedisLink::WatchWrites() {
  if (writing_ || ctx_ == nullptr) return;
  writing_ = true;
  uv_poll_start(poll_, connected_ ? UV_READABLE | UV_WRITABLE : UV_WRITABLE, OnPoll);
}

void RedisLink::OnPoll(uv_poll_t* poll, int status, int events) {
  RedisLink* self = static_cast<PollData*>(poll->data)->link;
  if (self == nullptr || self->poll_ != poll) return;
  if (status < 0) {
    self->Reset("connection lost");
    return;
  }
  if ((events & UV_READABLE) != 0) {
    self->OnReadable();
    if (self->poll_ != poll) return;  // reset while answering
  }
  if ((events & UV_WRITABLE) != 0) self->OnWritable();
}

void RedisLink::OnWritable() {
  if (!connected_) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(ctx_->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == EINPROGRESS) return;
    if (err != 0) {
      char buf[128];
      Reset(strerror_r(err, buf, sizeof(buf)));  // the calls queued on it fail here
      return;
    }
    connected_ = true;
    backoff_ms_ = 0;
  }
  if (out_sent_ < out_.size()) {
    ssize_t n;
    do {
      n = send(ctx_->fd, out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Reset("connection lost");
      return;
    }
    out_sent_ += static_cast<size_t>(n);
  }
  if (out_sent_ == out_.size()) {  // all written: the buffer is reused from its start
    out_.clear();
    out_sent_ = 0;
    writing_ = false;
    uv_poll_start(poll_, UV_READABLE, OnPoll);
  } else {
    uv_poll_start(poll_, UV_READABLE | UV_WRITABLE, OnPoll);
  }
}

void RedisLink::OnReadable() {
  redisContext* c = ctx_;
  if (redisBufferRead(c) != REDIS_OK) {  // closed by the server, or a socket error
    Reset("connection lost");
    return;
  }
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {  // not RESP
      Reset("connection lost");
      return;
    }
    if (reply == nullptr) return;  // the rest has not come yet
    Dispatch(static_cast<const redisReply*>(reply));
    replies_.Clear();
    if (ctx_ != c) return;  // reset while answering
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

void RedisLink::Reset(std::string_view error) {
  DropSentinel();
  CloseConnection();
  int64_t now = static_cast<int64_t>(uv_now(loop_));
  backoff_ms_ = std::min(kMaxBackoffMs, std::max(kMinBackoffMs, backoff_ms_ * 2));
  retry_at_ms_ = now + backoff_ms_;
  while (count_ > 0) {
    Waiter* waiter = ring_[head_].waiter;
    uint64_t token = ring_[head_].token;
    PopFront();
    if (waiter != nullptr) waiter->OnRedisReply(nullptr, error, token);
  }
  uv_timer_stop(timer_);
  timer_due_ = INT64_MAX;
}

// ---------------------------------------------------------------- calls

void RedisLink::Append(std::initializer_list<std::string_view> args) {
  AppendCount('*', args.size(), &out_);
  for (std::string_view a : args) AppendArg(a, &out_);
  WatchWrites();
}

void RedisLink::AppendScript(const Pending& p, bool eval) {
  std::array<char, 24> window;
  std::array<char, 24> cost;
  auto script = static_cast<size_t>(p.script);
  std::string_view body = eval ? kScripts[script] : std::string_view(shas_[script]);
  std::string_view verb = eval ? "EVAL" : "EVALSHA";
  if (p.script == Script::kFixed) {
    Append({verb, body, "1", p.key, Decimal(p.window_s, &window), Decimal(p.cost, &cost)});
    return;
  }
  std::array<char, 24> limit;
  std::array<char, 24> left;
  if (p.previous_count < 0) {  // one server: both counters in the script
    Append({verb, body, "2", p.key, p.previous, Decimal(p.cost, &cost), Decimal(p.limit, &limit),
            Decimal(p.window_s, &window), Decimal(p.left_ms, &left)});
  } else {  // a cluster: the previous count was read from its own slot
    std::array<char, 24> previous;
    Append({verb, body, "1", p.key, Decimal(p.cost, &cost), Decimal(p.limit, &limit),
            Decimal(p.window_s, &window), Decimal(p.left_ms, &left),
            Decimal(static_cast<uint64_t>(p.previous_count), &previous)});
  }
}

void RedisLink::SendInternal(std::initializer_list<std::string_view> args, Script loads) {
  Pending& p = Reserve();
  p.kind = Kind::kInternal;
  p.script = loads;
  p.sent = true;
  p.waiter = nullptr;
  p.token = 0;
  p.deadline_ms = static_cast<int64_t>(uv_now(loop_)) + config_.timeout_ms;
  Append(args);
  Commit(p.deadline_ms);
}

void RedisLink::IncrementFixed(std::string_view key, uint64_t window_s, uint64_t cost,
                               Waiter* waiter, uint64_t token) {
  IncrementFixedBy(key, window_s, cost, waiter, token, 0, /*asking=*/false);
}

void RedisLink::IncrementFixedBy(std::string_view key, uint64_t window_s, uint64_t cost,
                                 Waiter* waiter, uint64_t token, int64_t deadline_ms, bool asking) {
  ScriptCall call;
  call.script = Script::kFixed;
  call.key = key;
  call.window_s = window_s;
  call.cost = cost;
  Submit(call, waiter, token, deadline_ms, asking);
}

void RedisLink::IncrementSliding(const SlidingCall& call, Waiter* waiter, uint64_t token) {
  IncrementSlidingBy(call, -1, waiter, token, 0, /*asking=*/false);
}

void RedisLink::IncrementSlidingBy(const SlidingCall& call, int64_t previous_count, Waiter* waiter,
                                   uint64_t token, int64_t deadline_ms, bool asking) {
  ScriptCall s;
  s.script = Script::kSliding;
  s.key = call.current;
  if (previous_count < 0) s.previous = call.previous;
  s.previous_count = previous_count;
  s.window_s = call.window_s;
  s.cost = call.cost;
  s.limit = call.limit;
  s.left_ms = call.left_ms;
  Submit(s, waiter, token, deadline_ms, asking);
}

void RedisLink::Submit(const ScriptCall& call, Waiter* waiter, uint64_t token, int64_t deadline_ms,
                       bool asking) {
  Readiness r = EnsureConnected();
  if (r == Readiness::kDown) {
    waiter->OnRedisReply(nullptr, "Redis unreachable", token);
    return;
  }
  if (deadline_ms == 0) deadline_ms = static_cast<int64_t>(uv_now(loop_)) + config_.timeout_ms;
  if (r == Readiness::kWaiting) {
    // Sent once the master's address is known (ConnectTo).
    ReserveScript(call, waiter, token, deadline_ms, /*sent=*/false);
    Commit(deadline_ms);
    return;
  }
  // Valid for the next command on this connection only: the two go out together.
  if (asking) SendInternal({"ASKING"});
  SendScript(call, waiter, token, deadline_ms, shas_[static_cast<size_t>(call.script)].empty());
}

RedisLink::Pending& RedisLink::ReserveScript(const ScriptCall& call, Waiter* waiter, uint64_t token,
                                             int64_t deadline_ms, bool sent) {
  Pending& p = Reserve();
  p.kind = Kind::kScript;
  p.script = call.script;
  p.sent = sent;
  p.waiter = waiter;
  p.token = token;
  p.deadline_ms = deadline_ms;
  p.key.assign(call.key);  // the slot's capacity, kept from its last use
  p.previous.assign(call.previous);
  p.previous_count = call.previous_count;
  p.window_s = call.window_s;
  p.cost = call.cost;
  p.limit = call.limit;
  p.left_ms = call.left_ms;
  return p;
}

void RedisLink::SendScript(const ScriptCall& call, Waiter* waiter, uint64_t token,
                           int64_t deadline_ms, bool eval) {
  AppendScript(ReserveScript(call, waiter, token, deadline_ms, /*sent=*/true), eval);
  Commit(deadline_ms);
}

void RedisLink::Query(std::initializer_list<std::string_view> args, Waiter* waiter, uint64_t token,
                      int64_t deadline_ms, bool asking) {
  if (EnsureConnected() != Readiness::kReady) {
    waiter->OnRedisReply(nullptr, "Redis unreachable", token);
    return;
  }
  if (asking) SendInternal({"ASKING"});
  Pending& p = Reserve();
  p.kind = Kind::kQuery;
  p.sent = true;
  p.waiter = waiter;
  p.token = token;
  p.deadline_ms = deadline_ms;
  Append(args);
  Commit(deadline_ms);
}

void RedisLink::Dispatch(const redisReply* reply) {
  if (count_ == 0) return;         // nothing asked: nobody to answer
  if (!ring_[head_].sent) return;  // cannot happen: unsent calls follow sent ones
  Pending& front = ring_[head_];
  if (front.kind == Kind::kInternal) {
    // The link's own calls: SCRIPT LOAD gives the SHA for EVALSHA; a failed AUTH, SELECT or
    // ASKING leaves the connection unusable.
    Script loads = front.script;
    PopFront();
    if (reply->type == REDIS_REPLY_ERROR) {
      Reset(std::string_view(reply->str, reply->len));
      return;
    }
    if (reply->type == REDIS_REPLY_STRING && reply->len == 40) {
      shas_[static_cast<size_t>(loads)].assign(reply->str, reply->len);
    }
    return;
  }
  if (front.waiter == nullptr) {  // forgotten
    PopFront();
    return;
  }
  if (front.kind == Kind::kScript && reply->type == REDIS_REPLY_ERROR &&
      std::string_view(reply->str, reply->len).starts_with("NOSCRIPT")) {
    // The server lost the script (SCRIPT FLUSH, a restart behind a proxy): send it whole.
    Pending p = std::move(front);
    PopFront();
    auto script = static_cast<size_t>(p.script);
    shas_[script].clear();
    SendInternal({"SCRIPT", "LOAD", kScripts[script]}, p.script);
    SendScript(ScriptOf(p), p.waiter, p.token, p.deadline_ms, /*eval=*/true);
    return;
  }
  Waiter* waiter = front.waiter;
  uint64_t token = front.token;
  PopFront();
  waiter->OnRedisReply(reply, {}, token);
}

void RedisLink::Forget(const Waiter* waiter) {
  for (size_t i = 0; i < count_; ++i) {
    Pending& p = ring_[(head_ + i) % ring_.size()];
    if (p.waiter == waiter) p.waiter = nullptr;
  }
}

}  // namespace turnpike::plugins::limit_count
