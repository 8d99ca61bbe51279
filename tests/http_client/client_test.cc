// http_client::Client against a scripted loopback server on the same loop.
#include "http_client/client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <optional>

#include "http_client/test_server.h"
#include "support/net.h"

namespace turnpike::http_client::testing {
namespace {

using core::testing::TestLoop;

class ClientTest : public ::testing::Test {
 protected:
  // Starts the server with `handler`, and the client.
  void Serve(TestServer::Handler handler, ClientOptions options = {}) {
    server_ = std::make_unique<TestServer>(loop_.get(), std::move(handler));
    client_ = std::make_unique<Client>(loop_.get(), options);
  }

  // Fetches in whole-body mode and runs the loop until the result.
  Result FetchAndWait(Request req, const Origin* origin = nullptr) {
    std::optional<Result> result;
    RequestHandle h = client_->Fetch(origin ? *origin : server_->origin(), std::move(req),
                                     [&](Result r) { result = std::move(r); });
    EXPECT_FALSE(result.has_value()) << "no callback inside Fetch()";
    EXPECT_TRUE(loop_.RunUntil([&] { return result.has_value(); }));
    EXPECT_FALSE(h.active());
    return result.value_or(Result{});
  }

  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  TestLoop loop_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, WholeBodyResponseWithContentLength) {
  Serve([](ServerConn& c, const ServerRequest& r) {
    c.Send(Answer(201, "created " + r.body, "X-Consul-Index: 42\r\n"));
  });
  Request req;
  req.method = "PUT";
  req.target = "/v1/kv/a?cas=0";
  req.headers = {{"X-Token", "secret"}};
  req.body = "value";
  Result r = FetchAndWait(req);
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(r.response.body, "created value");
  EXPECT_EQ(r.response.Header("x-consul-index"), "42");
  ASSERT_EQ(server_->requests.size(), 1u);
  const ServerRequest& s = server_->requests[0];
  EXPECT_EQ(s.method, "PUT");
  EXPECT_EQ(s.target, "/v1/kv/a?cas=0");
  EXPECT_EQ(s.Field("Host"), "127.0.0.1:" + std::to_string(server_->port()));
  EXPECT_EQ(s.Field("X-Token"), "secret");
  EXPECT_EQ(s.Field("Content-Length"), "5");
}

TEST_F(ClientTest, KeepAliveReusesOneConnectionPerOrigin) {
  Serve([](ServerConn& c, const ServerRequest& r) { c.Send(Answer(200, r.target)); });
  for (int i = 0; i < 3; ++i) {
    Request req;
    req.target = "/n" + std::to_string(i);
    Result r = FetchAndWait(req);
    ASSERT_TRUE(r.ok()) << ErrorName(r.error);
    EXPECT_EQ(r.response.body, req.target);
    EXPECT_EQ(client_->idle_connections(), 1u);
  }
  EXPECT_EQ(server_->accepted, 1);
  EXPECT_EQ(client_->connects(), 1u);
  EXPECT_EQ(server_->requests[2].on_conn, 3);
}

// A long-poll loop: the next request goes out from the previous one's callback, on the same
// connection.
TEST_F(ClientTest, NextRequestFromTheCallbackReusesTheConnection) {
  Serve([](ServerConn& c, const ServerRequest& r) { c.SendAfter(5, Answer(200, r.target)); });
  int done = 0;
  RequestHandle h;
  std::function<void()> next = [&] {
    Request req;
    req.target = "/poll?index=" + std::to_string(done);
    h = client_->Fetch(server_->origin(), std::move(req), [&](Result r) {
      EXPECT_TRUE(r.ok()) << ErrorName(r.error);
      if (++done < 5) next();
    });
  };
  next();
  ASSERT_TRUE(loop_.RunUntil([&] { return done == 5; }));
  EXPECT_EQ(server_->accepted, 1);
}

TEST_F(ClientTest, ConnectionCloseAnswersAreNotPooled) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.Send(Answer(200, "x", "Connection: close\r\n"));
    c.CloseAfterSend();
  });
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(FetchAndWait(Request{}).ok());
  EXPECT_EQ(server_->accepted, 2);
  EXPECT_EQ(client_->idle_connections(), 0u);
}

TEST_F(ClientTest, KeepAliveFalseSendsConnectionClose) {
  Serve([](ServerConn& c, const ServerRequest&) { c.Send(Answer(200, "x")); });
  Request req;
  req.keep_alive = false;
  ASSERT_TRUE(FetchAndWait(req).ok());
  EXPECT_EQ(server_->requests[0].Field("Connection"), "close");
  EXPECT_EQ(client_->idle_connections(), 0u);
}

// A Kubernetes-style watch: a chunked stream whose events arrive over time, each reported as
// it arrives, then the end of the stream.
TEST_F(ClientTest, ChunkedWatchStreamDeliversPiecesAsTheyArrive) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.Send(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n");
    c.SendAfter(10, Chunk("{\"type\":\"ADDED\"}\n"));
    c.SendAfter(50, Chunk("{\"type\":\"MODIFIED\"}\n") + Chunk("{\"type\":\"DELETED\"}\n"));
    c.SendAfter(50, "0\r\n\r\n");
  });
  std::string all;
  int heads = 0;
  std::optional<Result> result;
  Callbacks cb;
  cb.on_head = [&](const Response& head) {
    ++heads;
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.Header("content-type"), "application/json");
    EXPECT_TRUE(all.empty());
  };
  cb.on_body = [&](std::string_view piece) { all.append(piece); };
  cb.on_done = [&](Result r) { result = std::move(r); };
  Request req;
  req.target = "/api/v1/endpoints?watch=1";
  RequestHandle h = client_->Fetch(server_->origin(), req, std::move(cb));
  const std::string first = "{\"type\":\"ADDED\"}\n";
  ASSERT_TRUE(loop_.RunUntil([&] { return all.size() >= first.size(); }));
  EXPECT_EQ(all, first) << "the first event alone, 50 ms before the next";
  EXPECT_FALSE(result.has_value());
  ASSERT_TRUE(loop_.RunUntil([&] { return result.has_value(); }));
  ASSERT_TRUE(result->ok()) << ErrorName(result->error);
  EXPECT_EQ(heads, 1);
  EXPECT_EQ(all, "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n{\"type\":\"DELETED\"}\n");
  EXPECT_TRUE(result->response.body.empty()) << "streaming mode does not collect";
  EXPECT_EQ(client_->idle_connections(), 1u);
}

// A Consul blocking query: the server answers after a while; the read timeout is above it.
TEST_F(ClientTest, BlockingQueryThatAnswersLate) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.SendAfter(150, Answer(200, "[]", "X-Consul-Index: 7\r\n"));
  });
  Request req;
  req.target = "/v1/health/service/web?index=6&wait=1s";
  req.read_timeout = 2;
  auto start = uv_now(loop_.get());
  Result r = FetchAndWait(req);
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_GE(uv_now(loop_.get()) - start, 140u);
  EXPECT_EQ(r.response.Header("X-Consul-Index"), "7");
}

TEST_F(ClientTest, ReadTimeoutWhenTheAnswerComesTooLate) {
  Serve([](ServerConn& c, const ServerRequest&) { c.SendAfter(500, Answer(200, "late")); });
  Request req;
  req.read_timeout = 0.05;
  Result r = FetchAndWait(req);
  EXPECT_EQ(r.error, Error::kReadTimeout);
  EXPECT_EQ(client_->idle_connections(), 0u);
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->peer_closes == 1; }));
}

// The read timeout is between two reads: a stream that keeps sending is never cut off.
TEST_F(ClientTest, ReadTimeoutCountsBetweenReadsOfAStream) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.Send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 8; ++i) c.SendAfter(30, Chunk("tick\n"));
    c.SendAfter(30, "0\r\n\r\n");
  });
  Request req;
  req.read_timeout = 0.1;  // less than the 270 ms the stream lasts
  Result r = FetchAndWait(req);
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_EQ(r.response.body.size(), 8u * 5);
}

TEST_F(ClientTest, CloseDelimitedBodyEndsAtEof) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.Send("HTTP/1.1 200 OK\r\n\r\nuntil the end");
    c.CloseAfterSend();
  });
  Result r = FetchAndWait(Request{});
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_EQ(r.response.body, "until the end");
  EXPECT_EQ(client_->idle_connections(), 0u);
}

TEST_F(ClientTest, InterimAnswersAreSkippedAndHeadHasNoBody) {
  Serve([](ServerConn& c, const ServerRequest& r) {
    if (r.method == "HEAD") {
      c.Send("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
    } else {
      c.Send("HTTP/1.1 100 Continue\r\n\r\n" + Answer(200, "after 100"));
    }
  });
  Result r = FetchAndWait(Request{});
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_EQ(r.response.body, "after 100");
  Request head;
  head.method = "HEAD";
  r = FetchAndWait(head);
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_EQ(r.response.Header("Content-Length"), "1234");
  EXPECT_TRUE(r.response.body.empty());
  EXPECT_EQ(server_->accepted, 1) << "both on one connection";
}

TEST_F(ClientTest, MalformedResponsesAreRejectedAndTheirConnectionsClosed) {
  const std::vector<std::string> bad = {
      "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",                           // bare LF
      "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nhi",                    // status
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx",               // coding
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxx\r\n",  // chunk size
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi",
      "SSH-2.0-OpenSSH\r\n\r\n",
  };
  size_t which = 0;
  Serve([&](ServerConn& c, const ServerRequest&) { c.Send(bad[which]); });
  for (which = 0; which < bad.size(); ++which) {
    Result r = FetchAndWait(Request{});
    EXPECT_EQ(r.error, Error::kMalformedResponse) << bad[which];
    EXPECT_EQ(client_->idle_connections(), 0u);
  }
  EXPECT_EQ(server_->accepted, static_cast<int>(bad.size()));
}

TEST_F(ClientTest, TooLargeBodiesAndHeads) {
  Serve([](ServerConn& c, const ServerRequest& r) {
    if (r.target == "/cl") c.Send(Answer(200, std::string(100, 'x')));
    if (r.target == "/chunked") {
      c.Send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Chunk(std::string(60, 'x')) +
             Chunk(std::string(60, 'x')) + "0\r\n\r\n");
    }
    if (r.target == "/head") c.Send(Answer(200, "", "X-Big: " + std::string(20000, 'h') + "\r\n"));
  });
  Request req;
  req.max_body_size = 100;
  req.target = "/cl";
  EXPECT_TRUE(FetchAndWait(req).ok()) << "exactly the limit";
  req.max_body_size = 99;
  EXPECT_EQ(FetchAndWait(req).error, Error::kTooLarge);
  req.target = "/chunked";
  Result r = FetchAndWait(req);
  EXPECT_EQ(r.error, Error::kTooLarge);
  EXPECT_EQ(r.response.status, 200) << "the head had arrived";
  req.target = "/head";
  EXPECT_EQ(FetchAndWait(req).error, Error::kTooLarge);
}

TEST_F(ClientTest, ConnectRefused) {
  Serve([](ServerConn&, const ServerRequest&) {});
  turnpike::testing::RefusedPort refused;
  Origin o;
  ASSERT_TRUE(Origin::FromIp("127.0.0.1", refused.port(), &o));
  Result r = FetchAndWait(Request{}, &o);
  EXPECT_EQ(r.error, Error::kConnectFailed);
  EXPECT_EQ(r.uv_error, UV_ECONNREFUSED);
  EXPECT_EQ(client_->open_connections(), 0u);
}

TEST_F(ClientTest, ConnectTimeout) {
  Serve([](ServerConn&, const ServerRequest&) {});
  // A listener that never accepts, its backlog full: further SYNs are dropped.
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  uv_ip4_addr("127.0.0.1", 0, &addr);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(lfd, 0), 0);
  socklen_t len = sizeof(addr);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(fd);
  }
  loop_.RunFor(20);
  Origin o;
  ASSERT_TRUE(Origin::FromIp("127.0.0.1", ntohs(addr.sin_port), &o));
  Request req;
  req.connect_timeout = 0.1;
  Result r = FetchAndWait(req, &o);
  EXPECT_EQ(r.error, Error::kConnectTimeout);
  for (int fd : fillers) close(fd);
  close(lfd);
}

TEST_F(ClientTest, SendTimeoutWhenTheServerDoesNotRead) {
  Serve([](ServerConn&, const ServerRequest&) {});
  server_->hold_reads = true;
  Request req;
  req.method = "POST";
  req.body = std::string(32 << 20, 'b');
  req.send_timeout = 0.1;
  Result r = FetchAndWait(req);
  EXPECT_EQ(r.error, Error::kSendTimeout);
}

TEST_F(ClientTest, InvalidRequestsFailWithoutSendingAnything) {
  Serve([](ServerConn& c, const ServerRequest&) { c.Send(Answer(200, "")); });
  std::vector<Request> bad(5);
  bad[0].method = "GE T";
  bad[1].target = "/a b";
  bad[2].target = "no-slash";
  bad[3].headers = {{"X-A", "v\r\nInjected: 1"}};
  bad[4].headers = {{"Content-Length", "3"}};
  for (const Request& req : bad) EXPECT_EQ(FetchAndWait(req).error, Error::kInvalidRequest);
  EXPECT_EQ(server_->accepted, 0);
}

// Dropping the handle in the middle of a stream: no callback after that, the connection closes.
TEST_F(ClientTest, CancelMidStream) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.Send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Chunk("one"));
    c.SendAfter(20, Chunk("two"));
    c.SendAfter(20, Chunk("three"));
  });
  std::optional<RequestHandle> h;
  int pieces = 0, dones = 0;
  Callbacks cb;
  cb.on_body = [&](std::string_view piece) {
    ++pieces;
    if (piece == "two") h.reset();  // cancel from inside the callback
  };
  cb.on_done = [&](Result) { ++dones; };
  h.emplace(client_->Fetch(server_->origin(), Request{}, std::move(cb)));
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->peer_closes == 1; }));
  loop_.RunFor(60);
  EXPECT_EQ(pieces, 2);
  EXPECT_EQ(dones, 0);
  EXPECT_EQ(client_->open_connections(), 0u);
}

TEST_F(ClientTest, CancelBeforeTheAnswer) {
  Serve([](ServerConn& c, const ServerRequest&) { c.SendAfter(50, Answer(200, "late")); });
  int dones = 0;
  RequestHandle h = client_->Fetch(server_->origin(), Request{}, [&](Result) { ++dones; });
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->requests.size() == 1; }));
  h.Cancel();
  EXPECT_FALSE(h.active());
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->peer_closes == 1; }));
  loop_.RunFor(80);
  EXPECT_EQ(dones, 0);
}

// The server dropped a kept-alive connection just as the next request went out on it: the
// request is sent again on a new connection, once.
TEST_F(ClientTest, StalePooledConnectionIsRetriedOnceOnAFreshOne) {
  Serve([](ServerConn& c, const ServerRequest& r) {
    if (r.conn == 1 && r.on_conn == 2) {
      c.Close();  // as if its keep-alive timeout had just expired
      return;
    }
    c.Send(Answer(200, "conn " + std::to_string(r.conn)));
  });
  ASSERT_TRUE(FetchAndWait(Request{}).ok());
  Result r = FetchAndWait(Request{});
  ASSERT_TRUE(r.ok()) << ErrorName(r.error);
  EXPECT_EQ(r.response.body, "conn 2");
  EXPECT_EQ(server_->accepted, 2);
  // Not for a POST: it may have been processed.
  Serve([](ServerConn& c, const ServerRequest& r) {
    if (r.on_conn == 2) {
      c.Close();
      return;
    }
    c.Send(Answer(200, ""));
  });
  Request post;
  post.method = "POST";
  ASSERT_TRUE(FetchAndWait(post).ok());
  EXPECT_EQ(FetchAndWait(post).error, Error::kConnectionClosed);
}

TEST_F(ClientTest, IdleConnectionClosedByTheServerLeavesThePool) {
  Serve([](ServerConn& c, const ServerRequest&) {
    c.Send(Answer(200, ""));
    c.SendAfter(20, "");  // then close a little later, without a word
    c.CloseAfterSend();
  });
  ASSERT_TRUE(FetchAndWait(Request{}).ok());
  EXPECT_EQ(client_->idle_connections(), 1u);
  ASSERT_TRUE(loop_.RunUntil([&] { return client_->open_connections() == 0; }));
  EXPECT_EQ(client_->idle_connections(), 0u);
}

TEST_F(ClientTest, IdleTimeoutClosesPooledConnections) {
  ClientOptions options;
  options.idle_timeout = 0.05;
  Serve([](ServerConn& c, const ServerRequest&) { c.Send(Answer(200, "")); }, options);
  ASSERT_TRUE(FetchAndWait(Request{}).ok());
  EXPECT_EQ(client_->idle_connections(), 1u);
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->peer_closes == 1; }));
  EXPECT_EQ(client_->idle_connections(), 0u);
}

TEST_F(ClientTest, ClosingTheClientEndsRequestsWithoutCallbacks) {
  Serve([](ServerConn& c, const ServerRequest&) { c.SendAfter(50, Answer(200, "")); });
  int dones = 0;
  RequestHandle h = client_->Fetch(server_->origin(), Request{}, [&](Result) { ++dones; });
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->requests.size() == 1; }));
  client_.reset();  // the handle outlives the client: it is simply inactive
  EXPECT_FALSE(h.active());
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->peer_closes == 1; }));
  loop_.RunFor(80);
  EXPECT_EQ(dones, 0);
}

TEST_F(ClientTest, ParallelRequestsToOneOriginUseSeveralConnections) {
  Serve([](ServerConn& c, const ServerRequest& r) { c.SendAfter(20, Answer(200, r.target)); });
  int done = 0;
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 6; ++i) {
    Request req;
    req.target = "/" + std::to_string(i);
    handles.push_back(client_->Fetch(server_->origin(), req, [&, i](Result r) {
      EXPECT_TRUE(r.ok());
      EXPECT_EQ(r.response.body, "/" + std::to_string(i));
      ++done;
    }));
  }
  ASSERT_TRUE(loop_.RunUntil([&] { return done == 6; }));
  EXPECT_EQ(server_->accepted, 6);
  EXPECT_EQ(client_->idle_connections(), client_->options().max_idle_per_origin);
}

}  // namespace
}  // namespace turnpike::http_client::testing
