#include "proxy/worker.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "core/loop_clock.h"
#include "proxy/downstream_connection.h"
#include "proxy/exchange.h"
#include "proxy/pick_prefetch.h"
#include "proxy/upstream_connection.h"

namespace turnpike::proxy {

Worker::Worker(int index, std::shared_ptr<const config::GatewayConfig> gateway,
               std::vector<int> listen_fds)
    : index_(index),
      gateway_(std::move(gateway)),
      listen_fds_(std::move(listen_fds)),
      worker_states_(WorkerEnvironment{index, std::max(1, gateway_->worker_processes), &loop_}) {
  // APISIX: enable_server_tokens adds the version to the Server header.
  server_header_ = gateway_->enable_server_tokens ? "Server: turnpike/" TURNPIKE_VERSION "\r\n"
                                                  : "Server: turnpike\r\n";
  idle_exchanges_.reserve(kMaxIdleLent);  // ReturnExchange never allocates
}

Worker::~Worker() {
  if (thread_.joinable()) {
    Abort();
    thread_.join();
  }
  for (int fd : listen_fds_) {
    if (fd >= 0) close(fd);
  }
}

void Worker::Start(SnapshotConstSharedPtr initial) {
  // Everything the control thread may touch (async handle) exists before the thread runs.
  uv_loop_init(&loop_);
  uv_async_init(&loop_, &async_, &OnAsync);
  async_.data = this;
  for (int& fd : listen_fds_) {
    auto tcp = std::make_unique<uv_tcp_t>();
    uv_tcp_init(&loop_, tcp.get());
    tcp->data = this;
    if (uv_tcp_open(tcp.get(), fd) != 0 ||
        uv_listen(reinterpret_cast<uv_stream_t*>(tcp.get()), 511, &OnConnection) != 0) {
      spdlog::error("worker {}: cannot listen on fd {}", index_, fd);
    }
    fd = -1;  // owned by the handle now
    listeners_.push_back(std::move(tcp));
  }
  slot_.Store(std::move(initial));
  thread_ = std::thread([this] { Run(); });
}

void Worker::Run() {
  core::LoopClock::BindThread(&loop_);  // plugins' clock reads: this loop's cached time
  write_batch_.Start(&loop_);           // before any connection exists (TcpConnection::Init)
  ApplySnapshot(slot_.Load());
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

void Worker::Publish(SnapshotConstSharedPtr snapshot) {
  slot_.Store(std::move(snapshot));
  uv_async_send(&async_);
}

void Worker::Drain() {
  drain_requested_.store(true, std::memory_order_release);
  uv_async_send(&async_);
}

void Worker::Abort() {
  abort_requested_.store(true, std::memory_order_release);
  uv_async_send(&async_);
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::OnAsync(uv_async_t* handle) {
  auto* w = static_cast<Worker*>(handle->data);
  if (w->finished_) return;
  if (w->abort_requested_.load(std::memory_order_acquire)) {
    w->CloseAll();
    return;
  }
  if (w->drain_requested_.load(std::memory_order_acquire) && !w->draining_) w->BeginDrain();
  if (w->finished_) return;
  SnapshotConstSharedPtr next = w->slot_.Load();
  if (next && next != w->snapshot_) w->ApplySnapshot(std::move(next));
}

void Worker::ApplySnapshot(SnapshotConstSharedPtr next) {
  if (!next) return;
  pickers_.Reset(*next);  // keeps the pickers of node sets that did not change
  // Keeps the states of instances `next` still has; while snapshot_ still holds the old ones.
  worker_states_.Reset(*next);
  snapshot_ = std::move(next);
  stats_.snapshot_version.store(snapshot_->version, std::memory_order_relaxed);
  ready_.store(true, std::memory_order_release);
}

std::string_view Worker::Date() { return date_.Get(std::time(nullptr)); }

Exchange* Worker::TakeExchange() {
  if (idle_exchanges_.empty()) return new Exchange(this);
  Exchange* x = idle_exchanges_.back().release();
  idle_exchanges_.pop_back();
  return x;
}

bool Worker::ReturnExchange(Exchange* x) {
  if (idle_exchanges_.size() >= kMaxIdleLent) return false;
  idle_exchanges_.emplace_back(x);
  return true;
}

std::string Worker::TakeBodyBuffer() {
  if (body_buffers_.empty()) return {};
  std::string b = std::move(body_buffers_.back());
  body_buffers_.pop_back();
  return b;
}

void Worker::ReturnBodyBuffer(std::string buffer) {
  // Enough for the connections buffering at once on a busy worker; beyond that, and for
  // buffers a since-shrunk limit no longer needs, the memory goes back.
  constexpr size_t kMaxIdleBuffers = 64;
  if (buffer.capacity() < 256 || body_buffers_.size() >= kMaxIdleBuffers ||
      buffer.capacity() > 2 * gateway_->client_body_buffer_size + 64) {
    return;
  }
  buffer.clear();
  body_buffers_.push_back(std::move(buffer));
}

// ---------------------------------------------------------------- connections

void Worker::OnConnection(uv_stream_t* server, int status) {
  auto* w = static_cast<Worker*>(server->data);
  if (status < 0 || w->draining_) return;
  if (w->clients_.size() >= static_cast<size_t>(w->gateway_->worker_connections)) {
    // Over nginx_config.event.worker_connections: take the connection off the backlog and
    // close it at once, so the client sees a closed connection rather than a hang.
    auto* refused = new uv_tcp_t;
    uv_tcp_init(w->loop(), refused);
    uv_accept(server, reinterpret_cast<uv_stream_t*>(refused));
    uv_close(reinterpret_cast<uv_handle_t*>(refused),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    w->stats_.refused.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  DownstreamConnection* c = DownstreamConnection::Accept(w, server);
  if (c == nullptr) return;
  c->worker_index = w->clients_.size();
  w->clients_.push_back(c);
  w->stats_.accepted.fetch_add(1, std::memory_order_relaxed);
  w->stats_.active_connections.fetch_add(1, std::memory_order_relaxed);
}

void Worker::OnClientClosed(DownstreamConnection* conn) {
  size_t i = conn->worker_index;
  if (i < clients_.size() && clients_[i] == conn) {
    clients_[i] = clients_.back();
    clients_[i]->worker_index = i;
    clients_.pop_back();
    stats_.active_connections.fetch_sub(1, std::memory_order_relaxed);
  }
  MaybeFinish();
}

void Worker::OnUpstreamClosed(UpstreamConnection* conn) {
  --upstream_live_;
  // An address with no idle connection left loses its entry when one of its connections
  // closes (PutIdle makes it again): under node churn the pool would otherwise keep every
  // address ever used.
  idle_.Remove(conn);  // a pooled connection closed without RemoveIdle (none today)
  idle_.Release(conn->pool_addr);
  MaybeFinish();
}

void Worker::PrefetchNextPicks(const upstream::Picker& picker, const upstream::NodeSet& pinned) {
  // UpstreamConnection starts with its PoolHook (its first base): the hook's address is the
  // object's.
  proxy::PrefetchNextPicks<sizeof(UpstreamConnection)>(picker, pinned.nodes, idle_);
}

UpstreamConnection* Worker::TakeIdle(const PoolAddr& addr) {
  return static_cast<UpstreamConnection*>(idle_.Take(addr));
}

bool Worker::PutIdle(UpstreamConnection* conn, size_t pool_size, double idle_timeout) {
  if (draining_ || conn->closing()) return false;
  if (!idle_.Put(conn, pool_size)) return false;
  conn->StartReading();  // notice when the node closes it
  conn->ArmTimer(idle_timeout);
  return true;
}

void Worker::RemoveIdle(UpstreamConnection* conn) { idle_.Remove(conn); }

// ---------------------------------------------------------------- shutdown

void Worker::BeginDrain() {
  draining_ = true;
  for (auto& l : listeners_) {
    uv_close(reinterpret_cast<uv_handle_t*>(l.get()), nullptr);
  }
  idle_.TakeAll([](PoolHook* c) { static_cast<UpstreamConnection*>(c)->Close(); });
  std::vector<DownstreamConnection*> clients = clients_;
  for (DownstreamConnection* c : clients) c->Drain();
  MaybeFinish();
}

void Worker::CloseAll() {
  if (!draining_) BeginDrain();
  std::vector<DownstreamConnection*> clients = clients_;
  for (DownstreamConnection* c : clients) c->Close();
  MaybeFinish();
}

void Worker::MaybeFinish() {
  if (!draining_ || finished_ || !clients_.empty()) return;
  finished_ = true;
  // No request is left, so no state is pinned: the plugins' worker states go now, on this
  // thread and while the loop still runs their handles' close callbacks.
  worker_states_.Clear();
  write_batch_.Close();  // what is pending goes now; later writes go at once
  // In-flight upstream connections close with their clients; the loop ends when every
  // handle has finished closing.
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
}

}  // namespace turnpike::proxy
