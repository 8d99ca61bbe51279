// The access log through the real daemon (nginx_config.http.access_log, access_log_format,
// access_log_format_escape): the line a user finds in the file for a proxied request, a
// retried one and Turnpike's own answers. The line is rendered from the same request
// variables everything else reads, so $upstream_addr is the resolved address of every
// attempt, not the configured host.

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "integration/itest.h"
#include "support/full_match.h"

namespace turnpike::itest {
namespace {

using std::chrono::seconds;

bool Like(const std::string& s, const std::string& re) {
  return testing::FullMatch(std::string_view(s), re.c_str());
}

class AccessLogTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backend_ = StartBackend(kBackendBin, "L"); }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override {
    ASSERT_NE(backend_, nullptr);
    ASSERT_NE(dead_.port(), 0);
  }

  // Starts the daemon with the access log on and `format_lines` (YAML lines under
  // nginx_config.http, may be empty), waits until discovery resolved every name.
  // {GOOD} = the backend by IP, {LOCAL} = by name (localhost), {DEAD} = a refusing node.
  void Start(const std::string& format_lines, const std::string& routes) {
    int status_port = FreePort();
    ASSERT_NE(status_port, 0);
    TurnpikeOptions options;
    options.apisix_extra =
        "  status:\n    ip: 127.0.0.1\n    port: " + std::to_string(status_port) + "\n";
    options.http_extra =
        "    enable_access_log: true\n    access_log: " + log_path() + "\n" + format_lines;
    std::string good = std::to_string(backend_->port());
    ASSERT_NO_FATAL_FAILURE(
        StartGateway(gw_,
                     Fill(routes, {{"GOOD", Node(backend_->port())},
                                   {"LOCAL", "{host: localhost, port: " + good + ", weight: 1}"},
                                   {"DEAD", Node(dead_.port())}}),
                     options));
    ASSERT_TRUE(WaitForPort(status_port, seconds(5)));
    ASSERT_TRUE(
        PollUntil([&] { return Get(status_port, "/status/ready").status == 200; }, seconds(10)))
        << Get(status_port, "/status/ready").DebugString();
  }
  std::string log_path() const { return dir_.File("access.log"); }

  // The log's lines once it has at least `n` (the writer flushes every 50 ms; waits up to 5 s).
  std::vector<std::string> Lines(size_t n) {
    std::vector<std::string> out;
    auto deadline = std::chrono::steady_clock::now() + seconds(5);
    for (;;) {
      out.clear();
      std::string text = ReadFile(log_path());
      for (size_t pos = 0, nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
        out.push_back(text.substr(pos, nl - pos));
      }
      if (out.size() >= n || std::chrono::steady_clock::now() > deadline) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  static std::vector<std::string> Split(const std::string& line, char sep) {
    std::vector<std::string> out;
    size_t pos = 0;
    for (size_t at; (at = line.find(sep, pos)) != std::string::npos; pos = at + 1) {
      out.push_back(line.substr(pos, at - pos));
    }
    out.push_back(line.substr(pos));
    return out;
  }

  static inline std::unique_ptr<Backend> backend_;
  RefusedPort dead_;
  TempDir dir_;
  Turnpike gw_{kTurnpikeBin};
};

// Fields of the custom format below, in order.
enum Field {
  kRemoteAddr,
  kRemoteUser,
  kRequest,
  kStatus,
  kUpstreamAddr,
  kUpstreamStatus,
  kUpstreamUri,
  kTag,
  kBodyBytes,
  kFieldCount
};
constexpr char kCustomFormat[] =
    "    access_log_format: '$remote_addr|$remote_user|$request|$status|$upstream_addr|"
    "$upstream_status|$upstream_uri|${http_x_tag}|$body_bytes_sent'\n";

TEST_F(AccessLogTest, CustomFormatShowsResolvedAddressAndEveryAttempt) {
  ASSERT_NO_FATAL_FAILURE(Start(kCustomFormat, R"(
routes:
  - uri: /hello
    upstream: {nodes: [{LOCAL}]}
  - uri: /status/*
    upstream:
      nodes: [{DEAD}, {GOOD}]
#END
)"));
  const std::string good = std::to_string(backend_->port());
  const std::string dead = std::to_string(dead_.port());

  HttpRequest hello;
  hello.target = "/hello?x=1";
  hello.headers = {{"X-Tag", "a\"b c"}, {"Authorization", "Basic dXNlcjpwYXNz"}};
  ASSERT_EQ(Fetch(gw_.port(), hello).status, 200);
  // Round robin over [DEAD, GOOD]: some request tries the refusing node first, then retries.
  constexpr int kRetried = 4;
  for (int i = 0; i < kRetried; ++i) {
    HttpResponse r = Get(gw_.port(), "/status/201");
    ASSERT_EQ(r.status, 201) << r.DebugString();
    EXPECT_EQ(BackendOf(r), "L");
  }
  ASSERT_EQ(Get(gw_.port(), "/nothing").status, 404);  // Turnpike's own: no route

  std::vector<std::string> lines = Lines(2 + kRetried);
  ASSERT_EQ(lines.size(), 2u + kRetried) << ReadFile(log_path());
  // Each connection may have gone to a different worker, each writing its own lines: the
  // order in the file is the order of the writes, so lines are told apart by their request:
  // /hello first, the /status ones next, /nothing last.
  auto rank = [](const std::string& l) {
    if (l.find("|GET /hello") != std::string::npos) return 0;
    return l.find("|GET /nothing") != std::string::npos ? 2 : 1;
  };
  std::stable_sort(lines.begin(), lines.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  std::vector<std::vector<std::string>> f;
  for (const std::string& l : lines) {
    f.push_back(Split(l, '|'));
    ASSERT_EQ(f.back().size(), static_cast<size_t>(kFieldCount)) << l;
  }

  // The node named `localhost` is logged as the address it resolved to (an IPv6 first
  // answer, where the hosts file has one, is refused and retried on 127.0.0.1).
  const std::vector<std::string>& h = f[0];
  EXPECT_EQ(h[kRemoteAddr], "127.0.0.1");
  EXPECT_EQ(h[kRemoteUser], "user");
  EXPECT_EQ(h[kRequest], "GET /hello?x=1 HTTP/1.1");
  EXPECT_EQ(h[kStatus], "200");
  EXPECT_TRUE(Like(h[kUpstreamAddr], ("(\\[::1\\]:" + good + ", )?127\\.0\\.0\\.1:" + good)))
      << lines[0];
  EXPECT_TRUE(Like(h[kUpstreamStatus], "(502, )?200")) << lines[0];
  EXPECT_EQ(h[kUpstreamUri], "/hello?x=1");
  EXPECT_EQ(h[kTag], "a\\x22b c");  // nginx's default escaping of values
  EXPECT_EQ(h[kBodyBytes], "12");   // "hello world\n"

  int retried = 0;
  for (int i = 1; i <= kRetried; ++i) {
    const std::vector<std::string>& r = f[static_cast<size_t>(i)];
    EXPECT_EQ(r[kRemoteUser], "-") << lines[i];
    EXPECT_EQ(r[kStatus], "201") << lines[i];
    EXPECT_EQ(r[kTag], "-") << lines[i];
    if (r[kUpstreamAddr] == "127.0.0.1:" + dead + ", 127.0.0.1:" + good) {
      ++retried;
      EXPECT_EQ(r[kUpstreamStatus], "502, 201") << lines[i];
    } else {
      EXPECT_EQ(r[kUpstreamAddr], "127.0.0.1:" + good) << lines[i];
      EXPECT_EQ(r[kUpstreamStatus], "201") << lines[i];
    }
  }
  EXPECT_GT(retried, 0) << "no request was retried after the refusing node";

  const std::vector<std::string>& n = f[1 + kRetried];
  EXPECT_EQ(n[kRequest], "GET /nothing HTTP/1.1");
  EXPECT_EQ(n[kStatus], "404");
  EXPECT_EQ(n[kUpstreamAddr], "-");  // no attempt
  EXPECT_EQ(n[kUpstreamStatus], "-");
}

// Without access_log_format, APISIX's default line.
TEST_F(AccessLogTest, DefaultFormatIsApisixs) {
  ASSERT_NO_FATAL_FAILURE(Start("", R"(
routes:
  - uri: /hello
    upstream: {nodes: [{GOOD}]}
#END
)"));
  HttpRequest req;
  req.target = "/hello?x=1";
  req.headers = {{"Host", "example.com"}, {"User-Agent", "agent \"x\""}};
  ASSERT_EQ(Fetch(gw_.port(), req).status, 200);
  ASSERT_EQ(Get(gw_.port(), "/nothing", {{"Host", "example.com"}}).status, 404);
  std::vector<std::string> lines = Lines(2);
  ASSERT_EQ(lines.size(), 2u) << ReadFile(log_path());
  // The two connections may have gone to different workers, each writing its own lines: the
  // order of the lines in the file is the order of the writes, not of the requests.
  if (lines[0].find("/nothing") != std::string::npos) std::swap(lines[0], lines[1]);
  const std::string node = "127\\.0\\.0\\.1:" + std::to_string(backend_->port());
  const std::string stamp = "\\[\\d\\d/\\w{3}/\\d{4}:\\d\\d:\\d\\d:\\d\\d [+-]\\d{4}\\]";
  EXPECT_TRUE(Like(lines[0], ("127\\.0\\.0\\.1 - - " + stamp +
                              " example\\.com \"GET /hello\\?x=1 HTTP/1\\.1\" 200 12 "
                              "\\d+\\.\\d{3} \"-\" \"agent \\\\x22x\\\\x22\" " +
                              node + " 200 \\d+\\.\\d{3} \"http://example\\.com/hello\\?x=1\"")))
      << lines[0];
  // Turnpike's 404: no upstream, so the upstream fields are "-".
  EXPECT_TRUE(Like(lines[1], ("127\\.0\\.0\\.1 - - " + stamp +
                              " example\\.com \"GET /nothing HTTP/1\\.1\" 404 \\d+ "
                              "\\d+\\.\\d{3} \"-\" \"-\" - - - \"-://-/nothing\"")))
      << lines[1];
}

// access_log_format_escape: json makes a JSON line of a JSON-shaped format, whatever the
// values hold; a missing value is "".
TEST_F(AccessLogTest, JsonEscapedFormatGivesJsonLines) {
  ASSERT_NO_FATAL_FAILURE(
      Start("    access_log_format: '{\"uri\":\"$request_uri\",\"ua\":\"$http_user_agent\","
            "\"user\":\"$remote_user\",\"upstream\":\"$upstream_addr\",\"status\":$status}'\n"
            "    access_log_format_escape: json\n",
            R"(
routes:
  - uri: /hello
    upstream: {nodes: [{GOOD}]}
#END
)"));
  ASSERT_EQ(Get(gw_.port(), "/hello?q=%22", {{"User-Agent", "a\"b\\c\td"}}).status, 200);
  std::vector<std::string> lines = Lines(1);
  ASSERT_EQ(lines.size(), 1u);
  std::string error;
  std::optional<JsonValue> v = ParseJson(lines[0], &error);
  ASSERT_TRUE(v.has_value()) << error << " in " << lines[0];
  ASSERT_NE(v->Find("ua"), nullptr);
  EXPECT_EQ(v->Find("ua")->string, "a\"b\\c\td");
  EXPECT_EQ(v->Find("uri")->string, "/hello?q=%22");
  EXPECT_EQ(v->Find("user")->string, "");
  EXPECT_EQ(v->Find("upstream")->string, "127.0.0.1:" + std::to_string(backend_->port()));
  EXPECT_EQ(v->Find("status")->number, 200);
}

// A format naming a variable nginx (and Turnpike) does not have stops the daemon at startup
// with the file, line and field.
TEST_F(AccessLogTest, BadFormatIsAConfigError) {
  Turnpike gw(kTurnpikeBin);
  TurnpikeOptions options;
  options.http_extra = "    access_log_format: '$remote_addr $no_such_var'\n";
  EXPECT_FALSE(gw.Start("routes: []\n#END\n", options));
  EXPECT_NE(gw.Stderr().find("config.yaml:"), std::string::npos) << gw.Stderr();
  EXPECT_NE(gw.Stderr().find(": nginx_config.http.access_log_format: unknown variable "
                             "\"$no_such_var\" at offset 13"),
            std::string::npos)
      << gw.Stderr();
}

}  // namespace
}  // namespace turnpike::itest
