// post_arg_NAME in route `vars` (reference §7.1): form bodies are read before routing, up to
// client_body_buffer_size, and still reach the node byte for byte; everything else streams.
// The *Streaming* tests upload 256 MiB each; filter with --gtest_filter=-*Streaming* for a
// quick run.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "integration/itest.h"
#include "support/pattern.h"
#include "support/proc_status.h"

namespace turnpike::itest {
namespace {

constexpr char kForm[] = "application/x-www-form-urlencoded";
constexpr size_t kDefaultLimit = 16 * 1024;  // client_body_buffer_size default

// Route A only when the form field name is "x"; everything else falls back to B.
constexpr char kRoutes[] = R"(
routes:
  - uri: /echo
    priority: 10
    vars: [["post_arg_name", "==", "x"]]
    upstream: {A}
  - uri: /echo
    upstream: {B}
#END
)";

class PostArgsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A", "B"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 2u) << "backends did not start"; }

  void Start(const std::string& yaml = kRoutes, const TurnpikeOptions& options = {}) {
    std::string routes = Fill(yaml, {{"A", Upstream(0)}, {"B", Upstream(1)}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }
  static std::string Upstream(size_t i) { return "{nodes: [" + Node(backends_[i]->port()) + "]}"; }

  static HttpRequest Post(std::string body, std::string content_type = kForm) {
    HttpRequest req{"POST", "/echo", {}, std::move(body)};
    if (!content_type.empty()) req.headers.push_back({"Content-Type", content_type});
    return req;
  }

  // The backend that answered, after checking it received `body` intact.
  static std::string ServedIntact(const HttpResponse& r, std::string_view body) {
    if (r.status != 200) return "unexpected: " + r.DebugString();
    EchoedRequest e = Echo(r);
    EXPECT_EQ(e.body_length, body.size());
    EXPECT_EQ(e.body_fnv1a, Fnv1aHex(Fnv1a(body)));
    EXPECT_EQ(e.body, body.substr(0, 1024));
    return BackendOf(r);
  }
  std::string Via(const HttpRequest& req) {
    return ServedIntact(Fetch(gw_.port(), req), req.body);
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(PostArgsTest, FormFieldSelectsTheRoute) {
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_EQ(Via(Post("name=x")), "A");
  EXPECT_EQ(Via(Post("other=1&name=x&name=y")), "A");  // first value
  EXPECT_EQ(Via(Post("name=y&name=x")), "B");
  EXPECT_EQ(Via(Post("name=%78")), "A");  // decoded
  EXPECT_EQ(Via(Post("na%6De=x")), "A");  // names too
  EXPECT_EQ(Via(Post("name=x+")), "B");   // "x "
  EXPECT_EQ(Via(Post("name")), "B");
  EXPECT_EQ(Via(Post("nothing=here")), "B");
  EXPECT_EQ(Via(Post("name=x", std::string(kForm) + "; charset=utf-8")), "A");
  // Other methods with a form body count the same.
  HttpRequest put = Post("name=x");
  put.method = "PUT";
  EXPECT_EQ(Via(put), "A");
  // No body at all: nothing to read, no field.
  EXPECT_EQ(Via(Post("")), "B");
}

TEST_F(PostArgsTest, OtherContentTypesAreNotParsed) {
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_EQ(Via(Post("name=x", "text/plain")), "B");
  EXPECT_EQ(Via(Post("name=x", "multipart/form-data; boundary=z")), "B");
  EXPECT_EQ(Via(Post("name=x", "")), "B");
  EXPECT_EQ(Via(Post("name=x", "Application/X-WWW-Form-Urlencoded")), "B");  // case-sensitive
}

TEST_F(PostArgsTest, ChunkedFormBody) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::string body = "pad=" + std::string(3000, 'p') + "&name=x";
  HttpRequest req = Post(ChunkedEncode(body, 7));
  req.headers.push_back({"Transfer-Encoding", "chunked"});
  HttpResponse r = Fetch(gw_.port(), req);
  EXPECT_EQ(ServedIntact(r, body), "A");
  EXPECT_TRUE(Echo(r).chunked);
  // An empty chunked body has no fields.
  HttpRequest empty = Post("0\r\n\r\n");
  empty.headers.push_back({"Transfer-Encoding", "chunked"});
  EXPECT_EQ(ServedIntact(Fetch(gw_.port(), empty), ""), "B");
}

TEST_F(PostArgsTest, BodyArrivingInManySmallPieces) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::string body = "a=1&name=x&z=" + std::string(200, 'z');
  for (bool chunked : {false, true}) {
    SCOPED_TRACE(chunked ? "chunked" : "content-length");
    HttpConnection c(gw_.port());
    ASSERT_TRUE(c.connected()) << c.error();
    std::string head = "POST /echo HTTP/1.1\r\nHost: pieces.test\r\nContent-Type: " +
                       std::string(kForm) + "\r\n";
    head += chunked ? "Transfer-Encoding: chunked\r\n\r\n"
                    : "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    std::string wire = chunked ? ChunkedEncode(body, 5) : body;
    ASSERT_TRUE(c.Send(head));
    for (size_t i = 0; i < wire.size(); i += 37) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ASSERT_TRUE(c.Send(std::string_view(wire).substr(i, 37))) << c.error();
    }
    EXPECT_EQ(ServedIntact(c.ReadResponse(), body), "A");
  }
}

TEST_F(PostArgsTest, BodyAtTheLimitIsParsed) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::string body = "name=x&pad=";
  body += std::string(kDefaultLimit - body.size(), 'p');
  ASSERT_EQ(body.size(), kDefaultLimit);
  EXPECT_EQ(Via(Post(body)), "A");
  // Chunked: the framing after the last data byte does not count.
  HttpRequest req = Post(ChunkedEncode(body, 4096));
  req.headers.push_back({"Transfer-Encoding", "chunked"});
  EXPECT_EQ(ServedIntact(Fetch(gw_.port(), req), body), "A");
}

TEST_F(PostArgsTest, BodyOverTheLimitIsForwardedIntactUnparsed) {
  ASSERT_NO_FATAL_FAILURE(Start());
  std::string body = "name=x&pad=";
  body += std::string(kDefaultLimit + 1 - body.size(), 'p');
  EXPECT_EQ(Via(Post(body)), "B");  // one byte over: not parsed, like nginx's temp file
  PatternBuffer pattern(1 << 20);
  std::string big = "name=x&pad=" + std::string(pattern.Slice(0, 300000));
  EXPECT_EQ(Via(Post(big)), "B");
  HttpRequest chunked = Post(ChunkedEncode(big, 1000));
  chunked.headers.push_back({"Transfer-Encoding", "chunked"});
  EXPECT_EQ(ServedIntact(Fetch(gw_.port(), chunked), big), "B");
  // A smaller limit from config.yaml.
  Turnpike small{kTurnpikeBin};
  TurnpikeOptions options;
  options.http_extra = "    client_body_buffer_size: 8\n";
  ASSERT_TRUE(small.Start(Fill(kRoutes, {{"A", Upstream(0)}, {"B", Upstream(1)}}), options))
      << small.error();
  EXPECT_EQ(ServedIntact(Fetch(small.port(), Post("name=x")), "name=x"), "A");
  EXPECT_EQ(ServedIntact(Fetch(small.port(), Post("name=x&a=b")), "name=x&a=b"), "B");
}

TEST_F(PostArgsTest, ClientMaxBodySizeStillApplies) {
  TurnpikeOptions options;
  options.client_max_body_size = "100";
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes, options));
  HttpRequest req = Post(ChunkedEncode("name=x&pad=" + std::string(200, 'p'), 50));
  req.headers.push_back({"Transfer-Encoding", "chunked"});
  HttpResponse r = Fetch(gw_.port(), req);
  EXPECT_EQ(r.status, 413) << r.DebugString();
  EXPECT_EQ(Via(Post("name=x")), "A");
}

TEST_F(PostArgsTest, ExpectContinueIsAnsweredBeforeTheBodyIsRead) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpConnection c(gw_.port());
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: expect.test\r\nContent-Type: " +
                     std::string(kForm) + "\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n"));
  HttpResponse interim = c.ReadResponse();
  ASSERT_EQ(interim.status, 100) << interim.DebugString();
  ASSERT_TRUE(c.Send("name=x")) << c.error();
  HttpResponse r = c.ReadResponse();
  EXPECT_EQ(ServedIntact(r, "name=x"), "A");
  ASSERT_FALSE(r.ConnectionClosing());
  // Only one 100 Continue: the next response on the connection is the next final one.
  HttpResponse next = c.RoundTrip(Post("name=y").Serialize(gw_.port()));
  EXPECT_EQ(ServedIntact(next, "name=y"), "B");
}

TEST_F(PostArgsTest, PipelinedRequestsBehindABufferedBody) {
  ASSERT_NO_FATAL_FAILURE(Start());
  HttpRequest chunked = Post(ChunkedEncode("name=x&k=2", 3));
  chunked.headers.push_back({"Transfer-Encoding", "chunked"});
  std::string wire = Post("name=x&k=1").Serialize(gw_.port()) + chunked.Serialize(gw_.port()) +
                     Post("name=y&k=3").Serialize(gw_.port()) +
                     HttpRequest{"GET", "/echo", {}, ""}.Serialize(gw_.port()) +
                     Post("name=x&k=5").Serialize(gw_.port());
  HttpConnection c(gw_.port());
  ASSERT_TRUE(c.Send(wire));
  EXPECT_EQ(ServedIntact(c.ReadResponse(), "name=x&k=1"), "A");
  EXPECT_EQ(ServedIntact(c.ReadResponse(), "name=x&k=2"), "A");
  EXPECT_EQ(ServedIntact(c.ReadResponse(), "name=y&k=3"), "B");
  EXPECT_EQ(ServedIntact(c.ReadResponse(), ""), "B");
  EXPECT_EQ(ServedIntact(c.ReadResponse(), "name=x&k=5"), "A");
}

TEST_F(PostArgsTest, StalledBodyIsTimedOut) {
  TurnpikeOptions options;
  options.http_extra = "    client_body_timeout: 1s\n";  // nginx: between two body reads
  ASSERT_NO_FATAL_FAILURE(Start(kRoutes, options));
  HttpConnection c(gw_.port());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: stall.test\r\nContent-Type: " +
                     std::string(kForm) + "\r\nContent-Length: 100\r\n\r\nname=x&pad="));
  EXPECT_TRUE(c.WaitForClose(std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  // The gateway is fine afterwards.
  EXPECT_EQ(Via(Post("name=x")), "A");
}

// A node that resets every connection once it has read a request head.
class ResettingNode {
 public:
  ResettingNode() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        ++accepted_;
        std::string got;
        char buf[4096];
        while (got.find("\r\n\r\n") == std::string::npos) {
          ssize_t n = read(c, buf, sizeof(buf));
          if (n <= 0) break;
          got.append(buf, static_cast<size_t>(n));
        }
        linger l{1, 0};  // RST, not FIN
        setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(c);
      }
    });
  }
  ~ResettingNode() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

TEST_F(PostArgsTest, BufferedBodyIsSentAgainOnRetry) {
  ResettingNode bad;
  ASSERT_NE(bad.port(), 0);
  TurnpikeOptions options;
  options.worker_processes = 1;  // one picker: the requests alternate between the nodes
  ASSERT_NO_FATAL_FAILURE(Start(Fill(R"(
routes:
  - uri: /echo
    vars: [["post_arg_name", "==", "x"]]
    upstream:
      nodes: [{BAD}, {GOOD}]
      retries: 1
#END
)",
                                     {{"BAD", Node(bad.port())},
                                      {"GOOD", Node(backends_[0]->port())}}),
                                options));
  // PUT is idempotent, so nginx's rule allows another node after the request was sent; the
  // body read before routing is still there to send again.
  for (int i = 0; i < 4; ++i) {
    HttpRequest put = Post("name=x&i=" + std::to_string(i));
    put.method = "PUT";
    EXPECT_EQ(Via(put), "A") << "request " << i;
  }
  EXPECT_GE(bad.accepted(), 1);
}

// ---------------------------------------------------------------- large uploads stream

constexpr uint64_t kUpload = 256ull << 20;

// Uploads kUpload bytes of form body ("name=x&pad=<pattern>") and checks it arrived whole.
void UploadLargeForm(int port, const std::string& expect_backend) {
  HttpConnection c(port);
  ASSERT_TRUE(c.connected()) << c.error();
  std::string prefix = "name=x&pad=";
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: upload.test\r\nContent-Type: " +
                     std::string(kForm) + "\r\nContent-Length: " + std::to_string(kUpload) +
                     "\r\n\r\n" + prefix));
  uint64_t fnv = Fnv1a(prefix);
  PatternBuffer pattern(1 << 20);
  for (uint64_t sent = prefix.size(); sent < kUpload;) {
    std::string_view slice =
        pattern.Slice(sent, static_cast<size_t>(std::min<uint64_t>(kUpload - sent, 1 << 20)));
    fnv = Fnv1a(slice, fnv);
    ASSERT_TRUE(c.Send(slice)) << "after " << sent << " bytes: " << c.error();
    sent += slice.size();
  }
  c.set_timeout(std::chrono::seconds(60));
  HttpResponse r = c.ReadResponse();
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EchoedRequest e = Echo(r);
  EXPECT_EQ(e.body_length, kUpload);
  EXPECT_EQ(e.body_fnv1a, Fnv1aHex(fnv));
  EXPECT_EQ(BackendOf(r), expect_backend);
}

void ExpectSmallPeakRss(pid_t pid) {
  ProcMemory m = TreeMemory(pid);
  EXPECT_GT(m.vm_hwm_kb, 0) << "could not read /proc/" << pid << "/status";
  EXPECT_LT(m.vm_hwm_kb, kMaxStreamingPeakRssKb) << "peaked at " << m.vm_hwm_kb / 1024 << " MiB";
}

TEST_F(PostArgsTest, StreamingLargeFormUploadOverTheLimit) {
  ASSERT_NO_FATAL_FAILURE(Start());
  ASSERT_NO_FATAL_FAILURE(UploadLargeForm(gw_.port(), "B"));
  ExpectSmallPeakRss(gw_.Pid());
}

TEST_F(PostArgsTest, StreamingWithoutPostArgRoutesReadsNothingFirst) {
  // No route reads post_arg_*: form bodies stream like any other.
  ASSERT_NO_FATAL_FAILURE(Start(R"(
routes:
  - uri: /echo
    vars: [["arg_name", "==", "x"]]
    upstream: {B}
  - uri: /echo
    upstream: {A}
#END
)"));
  ASSERT_NO_FATAL_FAILURE(UploadLargeForm(gw_.port(), "A"));
  ExpectSmallPeakRss(gw_.Pid());
  // And the 100-continue of a form body comes from the streaming path as before.
  HttpConnection c(gw_.port());
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: expect.test\r\nContent-Type: " +
                     std::string(kForm) + "\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n"));
  HttpResponse interim = c.ReadResponse();
  ASSERT_EQ(interim.status, 100) << interim.DebugString();
  ASSERT_TRUE(c.Send("name=x"));
  EXPECT_EQ(ServedIntact(c.ReadResponse(), "name=x"), "A");
}

}  // namespace
}  // namespace turnpike::itest
