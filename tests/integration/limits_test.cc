// Requests the gateway must refuse itself: malformed (400), too large a body (413), too long
// a request line (414), too large headers (431). Error bodies are JSON.

#include <string>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

class LimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "L"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    TurnpikeOptions options;
    options.client_max_body_size = "1k";
    std::string routes = Fill(R"(
routes:
  - uri: /*
    upstream: {nodes: [{NODE}]}
#END
)",
                              {{"NODE", Node(backend_->port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes, options));
  }

  // Sends raw bytes on a fresh connection and reads one final response.
  HttpResponse Raw(const std::string& bytes) {
    HttpConnection c(gw_.port());
    return c.RoundTrip(bytes);
  }

  static inline std::unique_ptr<Backend> backend_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(LimitsTest, MalformedRequestLineIs400) {
  for (const char* bad : {"this is not http\r\n\r\n", "GET /hello HTTP/1.1 extra\r\n\r\n",
                          "GET /hello XTTP/1.1\r\nHost: x\r\n\r\n"}) {
    HttpResponse r = Raw(bad);
    EXPECT_EQ(r.status, 400) << bad << "\n" << r.DebugString();
    ExpectJsonError(r);
  }
}

TEST_F(LimitsTest, BodyOverClientMaxBodySizeIs413) {
  // Only the headers are sent: Content-Length alone must be enough to refuse.
  HttpResponse r = Raw("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n");
  EXPECT_EQ(r.status, 413) << r.DebugString();
  ExpectJsonError(r);

  HttpResponse fits = Fetch(gw_.port(), HttpRequest{"POST", "/echo", {}, std::string(1000, 'x')});
  EXPECT_EQ(fits.status, 200) << fits.DebugString();
  EXPECT_EQ(Echo(fits).body_length, 1000u);
}

TEST_F(LimitsTest, RequestLineOver8KiBIs414) {
  std::string target = "/echo?q=" + std::string(9000, 'a');
  HttpResponse r = Raw("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.status, 414) << r.DebugString();
  ExpectJsonError(r);

  std::string ok_target = "/echo?q=" + std::string(4000, 'a');
  HttpResponse fits = Get(gw_.port(), ok_target);
  EXPECT_EQ(fits.status, 200) << fits.DebugString();
  EXPECT_EQ(Echo(fits).uri, ok_target);
}

TEST_F(LimitsTest, HeadersOver32KiBAre431) {
  Headers big;
  for (int i = 0; i < 40; ++i)
    big.emplace_back("X-Big-" + std::to_string(i), std::string(1000, 'h'));
  HttpResponse r = Fetch(gw_.port(), HttpRequest{"GET", "/echo", big, ""});
  EXPECT_EQ(r.status, 431) << r.DebugString();
  ExpectJsonError(r);

  big.resize(20);  // ~20 KiB is fine
  HttpResponse fits = Fetch(gw_.port(), HttpRequest{"GET", "/echo", big, ""});
  EXPECT_EQ(fits.status, 200) << fits.DebugString();
  EXPECT_EQ(Echo(fits).HeaderValues("X-Big-19").size(), 1u);
}

}  // namespace
}  // namespace turnpike::itest
