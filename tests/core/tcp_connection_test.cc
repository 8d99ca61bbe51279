// core::TcpConnection over real loopback sockets, both ends on one loop.
#include "core/tcp_connection.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "core/tcp_test_util.h"
#include "core/write_batch.h"
#include "support/net.h"

namespace turnpike::core::testing {
namespace {

class TcpConnectionTest : public ::testing::Test {
 protected:
  // A connected pair: client_ connected to server_ (accepted by the listener).
  void Connect() {
    listener_ = std::make_unique<TestListener>(
        loop_.get(),
        [this](uv_stream_t* s) {
          server_ = std::make_unique<Recorder>(loop_.get(), server_pool_);
          ASSERT_EQ(server_->conn.Accept(s), 0);
        },
        server_rcvbuf_);
    client_ = std::make_unique<Recorder>(loop_.get(), client_pool_);
    sockaddr_in addr = listener_->addr();
    ASSERT_EQ(client_->conn.Connect(reinterpret_cast<sockaddr*>(&addr), 5), 0);
    ASSERT_TRUE(loop_.RunUntil([&] { return client_->connects == 1 && server_ != nullptr; }));
    ASSERT_EQ(client_->connect_status, 0);
    ASSERT_TRUE(client_->conn.connected());
    ASSERT_TRUE(server_->conn.connected());
  }

  // Connect() on a loop with a WriteBatch, both ends reading.
  void ConnectBatched() {
    batch_.Start(loop_.get());
    Connect();
    server_->conn.StartReading();
    client_->conn.StartReading();
  }

  void CloseAll() {
    for (Recorder* r : {client_.get(), server_.get()}) {
      if (r != nullptr) r->conn.Close();
    }
    ASSERT_TRUE(loop_.RunUntil([&] {
      return (client_ == nullptr || client_->closed == 1) &&
             (server_ == nullptr || server_->closed == 1);
    }));
  }

  void TearDown() override {
    CloseAll();
    batch_.Close();  // (a no-op when the test did not start it)
    listener_.reset();
  }

  // Declared before the loop, so that its handles' memory outlives the loop's last run.
  WriteBatch batch_;
  TestLoop loop_;
  std::unique_ptr<TestListener> listener_;
  int server_rcvbuf_ = 0;
  BufferPool* client_pool_ = nullptr;
  BufferPool* server_pool_ = nullptr;
  std::unique_ptr<Recorder> client_;
  std::unique_ptr<Recorder> server_;
};

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 977) % 26);
  return s;
}

TEST_F(TcpConnectionTest, AcceptAndConnectExchangeBytesAndKnowTheirAddresses) {
  Connect();
  AddressText client_local, client_peer, server_local, server_peer;
  ASSERT_TRUE(client_->conn.LocalAddress(&client_local));
  ASSERT_TRUE(client_->conn.PeerAddress(&client_peer));
  ASSERT_TRUE(server_->conn.LocalAddress(&server_local));
  ASSERT_TRUE(server_->conn.PeerAddress(&server_peer));
  EXPECT_STREQ(client_peer.ip, "127.0.0.1");
  EXPECT_EQ(client_peer.port_number, listener_->port());
  EXPECT_EQ(std::to_string(client_peer.port_number), client_peer.port);
  EXPECT_EQ(server_local.port_number, listener_->port());
  EXPECT_EQ(server_peer.port_number, client_local.port_number);
  EXPECT_STREQ(server_peer.port, client_local.port);

  server_->conn.StartReading();
  client_->conn.StartReading();
  client_->Send("ping");
  // A small write completes inside Write().
  EXPECT_EQ(client_->writes_done, 1);
  EXPECT_EQ(client_->write_status, 0);
  EXPECT_FALSE(client_->conn.writing());
  server_->on_read = [&] {
    if (server_->in == "ping") server_->Send("pong");
  };
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->in == "pong"; }));
  EXPECT_EQ(server_->writes_done, 1);
}

TEST(AddressTextTest, FormatsIpv4AndIpv6) {
  sockaddr_in v4{};
  uv_ip4_addr("10.1.2.3", 8080, &v4);
  AddressText t;
  ASSERT_TRUE(FormatAddress(reinterpret_cast<sockaddr*>(&v4), &t));
  EXPECT_STREQ(t.ip, "10.1.2.3");
  EXPECT_STREQ(t.port, "8080");
  sockaddr_in6 v6{};
  uv_ip6_addr("::1", 65535, &v6);
  ASSERT_TRUE(FormatAddress(reinterpret_cast<sockaddr*>(&v6), &t));
  EXPECT_STREQ(t.ip, "::1");
  EXPECT_STREQ(t.port, "65535");
  EXPECT_EQ(t.port_number, 65535);
}

// A payload far larger than the socket buffers: the synchronous attempt takes part of it, the
// rest is queued, and the completion comes later from the loop, once, with every byte in order
// across several buffers.
TEST_F(TcpConnectionTest, LargeWriteIsQueuedAfterAPartialSynchronousWrite) {
  Connect();
  client_->conn.SetSendBufferSize(4096);
  std::string a = Pattern(3 << 20), b = Pattern(100), c = Pattern(2 << 20);
  uv_buf_t bufs[3] = {uv_buf_init(a.data(), static_cast<unsigned>(a.size())),
                      uv_buf_init(b.data(), static_cast<unsigned>(b.size())),
                      uv_buf_init(c.data(), static_cast<unsigned>(c.size()))};
  client_->conn.Write(bufs, 3);
  EXPECT_EQ(client_->writes_done, 0) << "cannot have completed synchronously";
  EXPECT_TRUE(client_->conn.writing());
  EXPECT_GT(client_->conn.write_queue_size(), 0u);
  server_->conn.StartReading();
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->writes_done == 1; }))
      << server_->in.size() << " " << server_->reads << " " << client_->conn.write_queue_size();
  EXPECT_EQ(client_->write_status, 0);
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->in.size() == a.size() + b.size() + c.size(); }));
  EXPECT_TRUE(server_->in == a + b + c);
  EXPECT_GT(server_->reads, 1);
}

// The reader's owner has no room: it hands out a zero-length buffer, reading stops, the
// writer's queue stays full; once the owner makes room and reads again everything arrives.
TEST_F(TcpConnectionTest, BackPressureStopsReadingAndHoldsTheWriter) {
  Connect();
  client_->conn.SetSendBufferSize(4096);
  std::string data = Pattern(4 << 20);
  server_->max_buffered = 64 * 1024;
  server_->conn.StartReading();
  client_->out = data;
  uv_buf_t b = uv_buf_init(client_->out.data(), static_cast<unsigned>(client_->out.size()));
  client_->conn.Write(&b, 1);
  ASSERT_TRUE(loop_.RunUntil([&] { return !server_->conn.reading(); }));
  EXPECT_GE(server_->in.size(), 64u * 1024);
  loop_.RunFor(30);
  EXPECT_EQ(client_->writes_done, 0);
  EXPECT_TRUE(client_->conn.writing());
  size_t received = server_->in.size();
  EXPECT_LT(received, data.size());
  // The consumer catches up.
  server_->max_buffered = SIZE_MAX;
  server_->conn.StartReading();
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->writes_done == 1; }));
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->in.size() == data.size(); }));
  EXPECT_TRUE(server_->in == data);
}

// Writing again from each completion nests only up to kMaxSyncDepth; deeper completions come
// from the loop, so the stack stays bounded and every write still completes, in order.
TEST_F(TcpConnectionTest, NestedSynchronousCompletionsAreBounded) {
  Connect();
  server_->conn.StartReading();
  int depth = 0, max_depth = 0, sent = 0;
  std::string msg = "x";
  client_->on_written = [&](int status) {
    ASSERT_EQ(status, 0);
    if (sent == 100) return;
    ++depth;
    max_depth = std::max(max_depth, depth);
    ++sent;
    msg = std::to_string(sent % 10);
    uv_buf_t b = uv_buf_init(msg.data(), 1);
    client_->conn.Write(&b, 1);
    --depth;
  };
  client_->Send("0");
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->writes_done == 101; }));
  // kMaxSyncDepth synchronous completions below one that came from the loop.
  EXPECT_LE(max_depth, TcpConnection::kMaxSyncDepth + 1);
  EXPECT_GT(max_depth, 1);
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->in.size() == 101; }));
  std::string want = "0";
  for (int i = 1; i <= 100; ++i) want += std::to_string(i % 10);
  EXPECT_EQ(server_->in, want);
}

TEST_F(TcpConnectionTest, PeerCloseIsReportedOnceAsEof) {
  Connect();
  server_->conn.StartReading();
  client_->Send("bye");
  client_->conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->read_ends == 1; }));
  EXPECT_EQ(server_->read_end_status, UV_EOF);
  EXPECT_EQ(server_->in, "bye");
  EXPECT_TRUE(server_->conn.read_ended());
  EXPECT_FALSE(server_->conn.reading());
  server_->conn.StartReading();  // no-op after the end
  EXPECT_FALSE(server_->conn.reading());
  loop_.RunFor(20);
  EXPECT_EQ(server_->read_ends, 1);
  EXPECT_EQ(client_->closed, 1);
  EXPECT_EQ(client_->read_ends, 0) << "no callback after Close()";
}

TEST_F(TcpConnectionTest, HalfClosedPeerCanStillBeWrittenTo) {
  Connect();
  server_->conn.StartReading();
  client_->conn.StartReading();
  client_->conn.Shutdown();
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->read_ends == 1 && client_->shutdowns == 1; }));
  EXPECT_EQ(client_->shutdown_status, 0);
  EXPECT_EQ(server_->read_end_status, UV_EOF);
  server_->Send("answer after FIN");
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->in == "answer after FIN"; }));
}

// Closing with a write queued: no OnWritten, one OnClosed, and the buffer may be freed as soon
// as Close() returns (ASan checks that nothing reads it afterwards).
TEST_F(TcpConnectionTest, CloseDuringAQueuedWriteAbandonsIt) {
  Connect();
  client_->conn.SetSendBufferSize(4096);
  auto payload = std::make_unique<std::string>(Pattern(8 << 20));
  uv_buf_t b = uv_buf_init(payload->data(), static_cast<unsigned>(payload->size()));
  client_->conn.Write(&b, 1);
  ASSERT_TRUE(client_->conn.writing());
  client_->conn.Close();
  client_->conn.Close();  // idempotent
  payload.reset();
  server_->conn.StartReading();
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->closed == 1 && server_->read_ends == 1; }));
  loop_.RunFor(20);
  EXPECT_EQ(client_->writes_done, 0);
  EXPECT_EQ(client_->closed, 1);
  EXPECT_NE(server_->read_end_status, 0);
}

TEST_F(TcpConnectionTest, CloseInsideOnReadStopsFurtherCallbacks) {
  Connect();
  server_->conn.StartReading();
  server_->on_read = [&] { server_->conn.Close(); };
  client_->Send(Pattern(200000));
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->closed == 1; }));
  EXPECT_EQ(server_->reads, 1);
  EXPECT_EQ(server_->read_ends, 0);
}

// Buffers lent from a pool while reading: once the bytes are consumed and the connection
// waits, it holds none, and every buffer is back in the pool.
TEST_F(TcpConnectionTest, AnIdleConnectionHoldsNoLentBuffer) {
  BufferPool pool(4096, 8);
  server_pool_ = &pool;
  Connect();
  server_->conn.StartReading();
  for (int i = 0; i < 5; ++i) {
    client_->Send(Pattern(10000));
    ASSERT_TRUE(loop_.RunUntil([&] { return server_->in.size() == 10000u * (i + 1); }));
    EXPECT_FALSE(server_->holds_buffer());
    EXPECT_EQ(pool.idle(), 1u);
  }
  client_->conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->read_ends == 1; }));
  EXPECT_FALSE(server_->holds_buffer()) << "the EOF read's buffer came back unused";
  EXPECT_GE(server_->unused, 1);
  EXPECT_EQ(pool.idle(), 1u);
  server_->conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->closed == 1; }));
}

TEST_F(TcpConnectionTest, TimerFiresOnceAndCanBeMovedOrDisarmed) {
  Connect();
  client_->conn.ArmTimer(0.02);
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->timeouts == 1; }));
  EXPECT_FALSE(client_->conn.timer_armed());
  // Moved later: only the later deadline fires.
  client_->conn.ArmTimer(0.01);
  client_->conn.ArmTimer(0.08);
  auto start = uv_now(loop_.get());
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->timeouts == 2; }));
  EXPECT_GE(uv_now(loop_.get()) - start, 75u);
  // Moved earlier.
  client_->conn.ArmTimer(5);
  client_->conn.ArmTimer(0.01);
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->timeouts == 3; }, std::chrono::seconds(1)));
  client_->conn.ArmTimer(0.01);
  client_->conn.DisarmTimer();
  loop_.RunFor(40);
  EXPECT_EQ(client_->timeouts, 3);
}

// nginx's send_timeout: a queued write whose reader stalls reports OnWriteTimeout (once for
// that write), independently of the owner's timer.
TEST_F(TcpConnectionTest, WriteTimeoutFiresWhenTheReaderStalls) {
  Connect();
  client_->conn.SetSendBufferSize(4096);
  client_->conn.set_write_timeout(0.05);
  client_->conn.ArmTimer(10);
  client_->out = Pattern(4 << 20);
  uv_buf_t b = uv_buf_init(client_->out.data(), static_cast<unsigned>(client_->out.size()));
  client_->conn.Write(&b, 1);
  ASSERT_TRUE(client_->conn.writing());
  auto start = uv_now(loop_.get());
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->write_timeouts == 1; }));
  EXPECT_GE(uv_now(loop_.get()) - start, 45u);
  EXPECT_TRUE(client_->conn.writing());
  EXPECT_EQ(client_->timeouts, 0);
  EXPECT_TRUE(client_->conn.timer_armed());
  loop_.RunFor(120);
  EXPECT_EQ(client_->write_timeouts, 1);
}

// The timeout is the time between two successive write operations: a reader that reads in
// bursts every 20 ms never trips a 0.3 s write timeout although the whole write takes longer.
// The kernel may itself stall such a stop-and-go transfer now and then (zero-window probes
// back off); a timeout is only an error when the reader saw no byte for less than 0.3 s.
TEST_F(TcpConnectionTest, WriteTimeoutCountsFromTheLastProgress) {
  server_rcvbuf_ = 64 * 1024;
  Connect();
  client_->conn.SetSendBufferSize(4096);
  client_->conn.set_write_timeout(0.3);
  client_->out = Pattern(6 << 20);
  server_->max_buffered = 0;  // no room until the pump below makes some
  server_->conn.StartReading();
  uv_buf_t b = uv_buf_init(client_->out.data(), static_cast<unsigned>(client_->out.size()));
  client_->conn.Write(&b, 1);
  ASSERT_TRUE(client_->conn.writing());
  struct Pump {
    uv_timer_t timer;
    Recorder* server;
    int ticks;
    size_t last_size;
    uint64_t last_progress;
    uint64_t max_gap;
  } pump{{}, server_.get(), 0, 0, uv_now(loop_.get()), 0};
  uv_timer_init(loop_.get(), &pump.timer);
  pump.timer.data = &pump;
  uv_timer_start(
      &pump.timer,
      [](uv_timer_t* t) {
        auto* p = static_cast<Pump*>(t->data);
        ++p->ticks;
        uint64_t now = uv_now(t->loop);
        if (p->server->in.size() != p->last_size) {
          p->max_gap = std::max(p->max_gap, now - p->last_progress);
          p->last_size = p->server->in.size();
          p->last_progress = now;
        }
        p->server->max_buffered = p->server->in.size() + 256 * 1024;
        p->server->conn.StartReading();
      },
      20, 20);
  bool done = loop_.RunUntil([&] { return client_->writes_done == 1; }, std::chrono::seconds(20));
  uv_close(reinterpret_cast<uv_handle_t*>(&pump.timer), nullptr);
  loop_.RunFor(5);
  ASSERT_TRUE(done);
  if (pump.max_gap < 300) {
    EXPECT_EQ(client_->write_timeouts, 0) << "longest pause of the reader: " << pump.max_gap;
  } else {
    EXPECT_LE(client_->write_timeouts, 1) << "once per write";
  }
  EXPECT_GT(pump.ticks, 3);
}

TEST_F(TcpConnectionTest, ConnectToAClosedLoopbackPortIsRefused) {
  turnpike::testing::RefusedPort refused;
  ASSERT_NE(refused.port(), 0);
  Recorder r(loop_.get());
  sockaddr_in addr{};
  uv_ip4_addr("127.0.0.1", refused.port(), &addr);
  ASSERT_EQ(r.conn.Connect(reinterpret_cast<sockaddr*>(&addr), 5), 0);
  EXPECT_EQ(r.connects, 0) << "never inside Connect()";
  EXPECT_TRUE(r.conn.connecting());
  ASSERT_TRUE(loop_.RunUntil([&] { return r.connects == 1; }));
  EXPECT_EQ(r.connect_status, UV_ECONNREFUSED);
  EXPECT_FALSE(r.conn.connected());
  r.conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return r.closed == 1; }));
  EXPECT_EQ(r.connects, 1);
}

// A listener that never accepts, with its backlog full: the kernel drops further SYNs, so a
// connect stays pending until the connect timeout.
TEST_F(TcpConnectionTest, ConnectTimesOutWhenTheListenerBacklogIsFull) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in addr{};
  uv_ip4_addr("127.0.0.1", 0, &addr);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(lfd, 0), 0);
  socklen_t len = sizeof(addr);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  // Fill the accept queue (backlog 0 still queues one) with connections nobody accepts.
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(fd);
  }
  loop_.RunFor(20);
  Recorder r(loop_.get());
  ASSERT_EQ(r.conn.Connect(reinterpret_cast<sockaddr*>(&addr), 0.1), 0);
  auto start = uv_now(loop_.get());
  ASSERT_TRUE(loop_.RunUntil([&] { return r.connects == 1; }));
  EXPECT_EQ(r.connect_status, UV_ETIMEDOUT);
  EXPECT_GE(uv_now(loop_.get()) - start, 95u);
  EXPECT_FALSE(r.conn.connecting());
  r.conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return r.closed == 1; }));
  EXPECT_EQ(r.connects, 1) << "the cancelled connect is not reported again";
  for (int fd : fillers) close(fd);
  close(lfd);
}

TEST_F(TcpConnectionTest, CanBeInitialisedAgainAfterOnClosed) {
  Connect();
  client_->conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->closed == 1; }));
  client_->closed = 0;
  client_->connects = 0;
  client_->conn.Init(loop_.get(), client_.get());
  server_->conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->closed == 1; }));
  server_.reset();  // the listener makes a new one
  sockaddr_in addr = listener_->addr();
  ASSERT_EQ(client_->conn.Connect(reinterpret_cast<sockaddr*>(&addr), 5), 0);
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->connects == 1 && server_ != nullptr; }));
  EXPECT_EQ(client_->connect_status, 0);
}

// ---------------------------------------------------------------- with a WriteBatch

// A write made by an I/O callback waits for the end of the loop turn (in progress, no
// completion yet), then goes out and completes; a write made from the test body, outside any
// I/O callback, goes out at once.
TEST_F(TcpConnectionTest, BatchedWritesOfAReadCallbackGoOutAtTheEndOfTheTurn) {
  ConnectBatched();
  bool waited = false;
  server_->on_read = [&] {
    server_->Send("answer");
    waited = server_->conn.writing() && server_->writes_done == 0 && batch_.pending() == 1;
  };
  client_->Send("question");
  EXPECT_EQ(client_->writes_done, 1) << "outside an I/O callback a write completes at once";
  EXPECT_EQ(batch_.pending(), 0u);
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->in == "answer"; }));
  EXPECT_TRUE(waited);
  EXPECT_EQ(server_->writes_done, 1);
  EXPECT_EQ(server_->write_status, 0);
  EXPECT_FALSE(server_->conn.writing());
  EXPECT_EQ(batch_.pending(), 0u);
}

// Several connections' writes of one turn all leave at its end, in the order they were made.
TEST_F(TcpConnectionTest, OneTurnsWritesOnSeveralConnectionsAllLeave) {
  ConnectBatched();
  Recorder other(loop_.get());
  std::unique_ptr<Recorder> other_server;
  TestListener other_listener(loop_.get(), [&](uv_stream_t* s) {
    other_server = std::make_unique<Recorder>(loop_.get());
    ASSERT_EQ(other_server->conn.Accept(s), 0);
  });
  sockaddr_in addr = other_listener.addr();
  ASSERT_EQ(other.conn.Connect(reinterpret_cast<sockaddr*>(&addr), 5), 0);
  ASSERT_TRUE(loop_.RunUntil([&] { return other.connects == 1 && other_server != nullptr; }));
  other_server->conn.StartReading();
  size_t waiting = 0;
  server_->on_read = [&] {  // one read answers on this connection and writes on the other
    server_->Send("to the client");
    other.Send("to the other server");
    waiting = batch_.pending();
  };
  client_->Send("go");
  ASSERT_TRUE(loop_.RunUntil([&] {
    return client_->in == "to the client" && other_server->in == "to the other server";
  }));
  EXPECT_EQ(waiting, 2u);
  EXPECT_EQ(server_->writes_done, 1);
  EXPECT_EQ(other.writes_done, 1);
  other.conn.Close();
  other_server->conn.Close();
  ASSERT_TRUE(loop_.RunUntil([&] { return other.closed == 1 && other_server->closed == 1; }));
}

// Close() before the turn ends abandons the waiting write: nothing is sent, no OnWritten.
TEST_F(TcpConnectionTest, ABatchedWriteAbandonedByCloseIsNeitherSentNorReported) {
  ConnectBatched();
  server_->on_read = [&] {
    server_->Send("never sent");
    server_->conn.Close();
  };
  client_->Send("question");
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->read_ends == 1 && server_->closed == 1; }));
  EXPECT_EQ(client_->in, "");
  EXPECT_EQ(server_->writes_done, 0);
  EXPECT_EQ(batch_.pending(), 0u);
}

// Shutdown() while the write waits: the bytes go first, then the FIN.
TEST_F(TcpConnectionTest, ShutdownAfterABatchedWriteSendsTheBytesFirst) {
  ConnectBatched();
  server_->on_read = [&] {
    server_->Send("last words");
    server_->conn.Shutdown();
  };
  client_->Send("question");
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->read_ends == 1 && server_->shutdowns == 1; }));
  EXPECT_EQ(client_->in, "last words");
  EXPECT_EQ(client_->read_end_status, UV_EOF);
  EXPECT_EQ(server_->writes_done, 1);
  EXPECT_EQ(server_->shutdown_status, 0);
}

// Writes made outside the I/O phase (a timer's callback), and writes of more buffers than a
// batch entry holds, are not deferred: they complete inside Write().
TEST_F(TcpConnectionTest, TimerAndManyBufferWritesAreNotBatched) {
  ConnectBatched();
  bool many_completed = false;
  std::string parts[WriteBatch::kMaxBuffers + 1];
  uv_buf_t bufs[WriteBatch::kMaxBuffers + 1];
  bool answered = false;
  server_->on_read = [&] {  // the timer's bytes arrived: answer in five buffers
    if (answered) return;
    answered = true;
    for (unsigned i = 0; i <= WriteBatch::kMaxBuffers; ++i) {
      parts[i] = "part" + std::to_string(i) + ";";
      bufs[i] = uv_buf_init(parts[i].data(), static_cast<unsigned>(parts[i].size()));
    }
    server_->conn.Write(bufs, WriteBatch::kMaxBuffers + 1);
    many_completed = server_->writes_done == 1;
  };
  bool timer_write_completed = false;
  client_->on_timeout = [&] {
    client_->Send("from a timer;");
    timer_write_completed = client_->writes_done == 1;
  };
  client_->conn.ArmTimer(0.001);
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->in == "part0;part1;part2;part3;part4;"; }));
  EXPECT_EQ(client_->timeouts, 1);
  EXPECT_TRUE(timer_write_completed);
  EXPECT_EQ(server_->in, "from a timer;");
  EXPECT_TRUE(many_completed);
}

// Closing the batch sends what waits, at once; writes after it are not batched.
TEST_F(TcpConnectionTest, ClosingTheBatchSendsWhatWaits) {
  ConnectBatched();
  int done_after_close = -1;
  server_->on_read = [&] {
    server_->Send("flushed by Close");
    batch_.Close();
    done_after_close = server_->writes_done;
  };
  client_->Send("question");
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->in == "flushed by Close"; }));
  EXPECT_EQ(done_after_close, 1);
  EXPECT_EQ(WriteBatch::ForLoop(loop_.get()), nullptr);
}

}  // namespace
}  // namespace turnpike::core::testing
