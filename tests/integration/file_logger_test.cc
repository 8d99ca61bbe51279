// The file-logger plugin and the nginx request variables through the real daemon: what a user
// finds in the log file (one JSON object per line), and `vars` on the new variables.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"
#include "support/full_match.h"
#include "support/pattern.h"

namespace turnpike::itest {
namespace {

bool Like(const std::string& s, const std::string& re) {
  return testing::FullMatch(std::string_view(s), re.c_str());
}

class FileLoggerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { backends_ = StartBackends({"A"}); }
  static void TearDownTestSuite() { backends_.clear(); }
  void SetUp() override { ASSERT_EQ(backends_.size(), 1u) << "backends did not start"; }

  void Start(const std::string& yaml) {
    std::string routes = Fill(yaml, {{"A", "{nodes: [" + Node(backends_[0]->port()) + "]}"},
                                     {"LOG", log_path()},
                                     {"PORT_A", std::to_string(backends_[0]->port())}});
    ASSERT_NO_FATAL_FAILURE(StartGateway(gw_, routes));
  }
  std::string log_path() const { return dir_.File("access.json"); }

  // The log's lines once it has at least `n` (waits up to 5 s for the writer thread).
  std::vector<JsonValue> Lines(size_t n) {
    std::vector<JsonValue> out;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      out.clear();
      std::string text = ReadFile(log_path());
      size_t pos = 0;
      while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) break;
        std::string error;
        std::optional<JsonValue> v = ParseJson(std::string_view(text).substr(pos, nl - pos), &error);
        EXPECT_TRUE(v.has_value()) << error << " in line: " << text.substr(pos, nl - pos);
        if (v) out.push_back(std::move(*v));
        pos = nl + 1;
      }
      if (out.size() >= n || std::chrono::steady_clock::now() > deadline) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  static std::string Str(const JsonValue& v, std::initializer_list<std::string_view> path) {
    const JsonValue* cur = &v;
    for (std::string_view k : path) {
      cur = cur->Find(k);
      if (cur == nullptr) return "<absent>";
    }
    if (cur->type == JsonValue::Type::kString) return cur->string;
    if (cur->type == JsonValue::Type::kNumber) return std::to_string(static_cast<int64_t>(cur->number));
    if (cur->type == JsonValue::Type::kBool) return cur->boolean ? "true" : "false";
    return "<other>";
  }

  static inline std::vector<std::unique_ptr<Backend>> backends_;
  TempDir dir_;
  Turnpike gw_{kTurnpikeBin};
};

TEST_F(FileLoggerTest, DefaultEntryIsTheFullLog) {
  Start(R"(
routes:
  - id: r1
    uri: /hello
    upstream: {A}
    plugins:
      file-logger: {path: "{LOG}"}
#END
)");
  HttpRequest req;
  req.target = "/hello?a=1&b=x%20y&a=2&flag";
  req.headers = {{"Host", "example.com"}, {"X-Trace", "t1"}, {"X-Multi", "1"}, {"X-Multi", "2"}};
  HttpResponse r = Fetch(gw_.port(), req);
  ASSERT_EQ(r.status, 200) << r.DebugString();
  std::vector<JsonValue> lines = Lines(1);
  ASSERT_EQ(lines.size(), 1u);
  const JsonValue& e = lines[0];
  EXPECT_EQ(Str(e, {"route_id"}), "r1");
  EXPECT_EQ(Str(e, {"service_id"}), "");
  EXPECT_EQ(Str(e, {"client_ip"}), "127.0.0.1");
  EXPECT_EQ(Str(e, {"upstream"}), "127.0.0.1:" + std::to_string(backends_[0]->port()));
  EXPECT_EQ(Str(e, {"request", "method"}), "GET");
  EXPECT_EQ(Str(e, {"request", "uri"}), "/hello?a=1&b=x%20y&a=2&flag");
  EXPECT_EQ(Str(e, {"request", "url"}),
            "http://example.com:" + std::to_string(gw_.port()) + "/hello?a=1&b=x%20y&a=2&flag");
  EXPECT_EQ(Str(e, {"request", "headers", "x-trace"}), "t1");
  EXPECT_EQ(Str(e, {"request", "headers", "host"}), "example.com");
  const JsonValue* multi = e.Find("request")->Find("headers")->Find("x-multi");
  ASSERT_NE(multi, nullptr);
  ASSERT_EQ(multi->type, JsonValue::Type::kArray);
  EXPECT_EQ(multi->array.size(), 2u);
  EXPECT_EQ(Str(e, {"request", "querystring", "b"}), "x y");
  EXPECT_EQ(Str(e, {"request", "querystring", "flag"}), "true");
  const JsonValue* a = e.Find("request")->Find("querystring")->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, JsonValue::Type::kArray);
  EXPECT_GT(std::stoi(Str(e, {"request", "size"})), 50);
  EXPECT_EQ(Str(e, {"response", "status"}), "200");
  EXPECT_EQ(Str(e, {"response", "headers", "x-backend-id"}), "A");
  EXPECT_EQ(Str(e, {"response", "headers", "content-length"}), "12");
  EXPECT_GT(std::stoi(Str(e, {"response", "size"})), 12);
  EXPECT_EQ(Str(e, {"response", "body"}), "<absent>");
  EXPECT_NE(Str(e, {"server", "hostname"}), "<absent>");
  EXPECT_NE(Str(e, {"server", "version"}), "<absent>");
  EXPECT_GT(std::stoll(Str(e, {"start_time"})), 1600000000000LL);
  EXPECT_GE(std::stoi(Str(e, {"latency"})), 0);
  EXPECT_GE(std::stoi(Str(e, {"upstream_latency"})), 0);
  EXPECT_GE(std::stoi(Str(e, {"apisix_latency"})), 0);

  // No route: service_id is the host, no route_id (the plugin is not on a global rule here,
  // so nothing is logged for it).
  EXPECT_EQ(Get(gw_.port(), "/nope").status, 404);
  Fetch(gw_.port(), req);
  EXPECT_EQ(Lines(2).size(), 2u);
}

TEST_F(FileLoggerTest, CustomFormatWithVariables) {
  Start(R"(
routes:
  - id: r2
    uri: /hello
    upstream: {A}
    plugins:
      file-logger:
        path: "{LOG}"
        log_format:
          host: "$host"
          "@timestamp": "$time_iso8601"
          client_ip: "$remote_addr"
          status: "$status"
          request_time: "$request_time"
          upstream_addr: "$upstream_addr"
          upstream_status: "$upstream_status"
          upstream_response_time: "$upstream_response_time"
          upstream_connect_time: "$upstream_connect_time"
          bytes_sent: "$bytes_sent"
          body_bytes_sent: "$body_bytes_sent"
          request_id: "$request_id"
          protocol: "$server_protocol"
          server_name: "$server_name"
          msec: "$msec"
          connection_requests: "$connection_requests"
          request: "$request"
          missing: "$http_x_missing"
          unknown: "$no_such_variable"
          literal: "fixed"
          number: 7
          nested: {method: "$request_method", uri: "$uri"}
#END
)");
  HttpRequest req;
  req.target = "/hello?q=1";
  req.headers = {{"Host", "example.com:8080"}};
  ASSERT_EQ(Fetch(gw_.port(), req).status, 200);
  std::vector<JsonValue> lines = Lines(1);
  ASSERT_EQ(lines.size(), 1u);
  const JsonValue& e = lines[0];
  EXPECT_EQ(Str(e, {"host"}), "example.com");
  EXPECT_EQ(Str(e, {"client_ip"}), "127.0.0.1");
  EXPECT_EQ(Str(e, {"status"}), "200");
  EXPECT_TRUE(Like(Str(e, {"request_time"}), R"(\d+\.\d{3})")) << Str(e, {"request_time"});
  EXPECT_EQ(Str(e, {"upstream_addr"}), "127.0.0.1:" + std::to_string(backends_[0]->port()));
  EXPECT_EQ(Str(e, {"upstream_status"}), "200");
  EXPECT_TRUE(Like(Str(e, {"upstream_response_time"}), R"(\d+\.\d{3})"));
  EXPECT_TRUE(Like(Str(e, {"upstream_connect_time"}), R"(\d+\.\d{3})"));
  EXPECT_EQ(std::stoi(Str(e, {"bytes_sent"})) - std::stoi(Str(e, {"body_bytes_sent"})) > 0, true);
  EXPECT_EQ(Str(e, {"body_bytes_sent"}), "12");
  EXPECT_TRUE(Like(Str(e, {"request_id"}), "[0-9a-f]{32}"));
  EXPECT_TRUE(Like(Str(e, {"@timestamp"}),
                                    R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d)"))
      << Str(e, {"@timestamp"});
  EXPECT_TRUE(Like(Str(e, {"msec"}), R"(\d{10}\.\d{3})")) << Str(e, {"msec"});
  EXPECT_EQ(Str(e, {"protocol"}), "HTTP/1.1");
  EXPECT_EQ(Str(e, {"server_name"}), "_");
  EXPECT_EQ(Str(e, {"connection_requests"}), "1");
  EXPECT_EQ(Str(e, {"request"}), "GET /hello?q=1 HTTP/1.1");
  EXPECT_EQ(Str(e, {"missing"}), "<absent>");
  EXPECT_EQ(Str(e, {"unknown"}), "<absent>");
  EXPECT_EQ(Str(e, {"literal"}), "fixed");
  EXPECT_EQ(Str(e, {"number"}), "7");
  EXPECT_EQ(Str(e, {"nested", "method"}), "GET");
  EXPECT_EQ(Str(e, {"nested", "uri"}), "/hello");
  EXPECT_EQ(Str(e, {"route_id"}), "r2");  // added by get_custom_format_log
}

TEST_F(FileLoggerTest, IncludeRespBodyAndItsExpression) {
  Start(R"(
routes:
  - uri: /hello
    upstream: {A}
    plugins:
      file-logger: {path: "{LOG}", include_resp_body: true}
  - uri: /status/*
    upstream: {A}
    plugins:
      file-logger:
        path: "{LOG}"
        include_resp_body: true
        include_resp_body_expr: [["status", "==", 201]]
        log_format: {uri: "$uri"}
#END
)");
  HttpResponse r = Get(gw_.port(), "/hello");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world\n");  // the client's body is untouched
  ASSERT_EQ(Lines(1).size(), 1u);
  EXPECT_EQ(Get(gw_.port(), "/status/201").status, 201);
  ASSERT_EQ(Lines(2).size(), 2u);
  EXPECT_EQ(Get(gw_.port(), "/status/202").status, 202);
  std::vector<JsonValue> lines = Lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Str(lines[0], {"response", "body"}), "hello world\n");
  // A custom format has no body field; the default entry of the status routes is not used.
  EXPECT_EQ(Str(lines[1], {"uri"}), "/status/201");
  EXPECT_EQ(Str(lines[2], {"uri"}), "/status/202");
}

TEST_F(FileLoggerTest, IncludeReqBodyReadsBodiesUpToTheBufferSize) {
  Start(R"(
routes:
  - uri: /echo
    upstream: {A}
    plugins:
      file-logger: {path: "{LOG}", include_req_body: true}
#END
)");
  // Any content type is read (not only forms), and still reaches the node intact.
  HttpRequest small{"POST", "/echo", {{"Content-Type", "application/json"}}, R"({"k": "v"})"};
  // (Each request waits for its log line: two workers may otherwise write in either order.)
  HttpResponse r = Fetch(gw_.port(), small);
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(Echo(r).body, small.body);
  ASSERT_EQ(Lines(1).size(), 1u);
  // Over client_body_buffer_size (16k): streamed, forwarded intact, logged without a body.
  std::string big(40000, 'x');
  for (size_t i = 0; i < big.size(); i += 97) big[i] = static_cast<char>('a' + i % 26);
  HttpRequest large{"POST", "/echo", {{"Content-Type", "text/plain"}}, big};
  r = Fetch(gw_.port(), large);
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(Echo(r).body_length, big.size());
  EXPECT_EQ(Echo(r).body_fnv1a, testing::Fnv1aHex(testing::Fnv1a(big)));
  ASSERT_EQ(Lines(2).size(), 2u);
  // A chunked body under the limit is read whole too.
  HttpRequest chunked{"POST", "/echo", {{"Transfer-Encoding", "chunked"}},
                      ChunkedEncode("abcdefg", 3)};
  r = Fetch(gw_.port(), chunked);
  ASSERT_EQ(r.status, 200) << r.DebugString();
  EXPECT_EQ(Echo(r).body, "abcdefg");

  std::vector<JsonValue> lines = Lines(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Str(lines[0], {"request", "body"}), small.body);
  EXPECT_EQ(Str(lines[1], {"request", "body"}), "<absent>");
  EXPECT_EQ(Str(lines[2], {"request", "body"}), "abcdefg");
}

TEST_F(FileLoggerTest, MatchDecidesWhatIsLogged) {
  Start(R"(
global_rules:
  - id: g
    plugins:
      file-logger:
        path: "{LOG}"
        log_format: {uri: "$uri", status: "$status"}
        match: [[["arg_log", "==", "yes"]], [["status", "==", 404]]]  # either one
routes:
  - uri: /hello
    upstream: {A}
#END
)");
  EXPECT_EQ(Get(gw_.port(), "/hello").status, 200);
  EXPECT_EQ(Get(gw_.port(), "/hello?log=yes").status, 200);
  EXPECT_EQ(Get(gw_.port(), "/nothing-here").status, 404);
  EXPECT_EQ(Get(gw_.port(), "/hello?log=no").status, 200);
  std::vector<JsonValue> lines = Lines(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // nothing more comes
  lines = Lines(2);
  ASSERT_EQ(lines.size(), 2u);
  // Each worker writes its own lines: the two may come in either order.
  if (Str(lines[0], {"uri"}) != "/hello") std::swap(lines[0], lines[1]);
  EXPECT_EQ(Str(lines[0], {"uri"}), "/hello");
  EXPECT_EQ(Str(lines[0], {"status"}), "200");
  EXPECT_EQ(Str(lines[1], {"uri"}), "/nothing-here");
  EXPECT_EQ(Str(lines[1], {"status"}), "404");
}

TEST_F(FileLoggerTest, VarsOnContentTypeAndServerProtocol) {
  Start(R"(
routes:
  - uri: /echo
    vars: [["content_type", "~~", "^application/json"]]
    upstream: {A}
  - uri: /hello
    vars: [["server_protocol", "==", "HTTP/1.1"], ["request_id", "~~", "^[0-9a-f]{32}$"]]
    upstream: {A}
#END
)");
  HttpRequest json;
  json.method = "POST";
  json.target = "/echo";
  json.headers = {{"Content-Type", "application/json; charset=utf-8"}};
  json.body = "{}";
  EXPECT_EQ(Fetch(gw_.port(), json).status, 200);
  json.headers = {{"Content-Type", "text/plain"}};
  EXPECT_EQ(Fetch(gw_.port(), json).status, 404);
  EXPECT_EQ(Get(gw_.port(), "/hello").status, 200);
}

TEST_F(FileLoggerTest, InvalidConfigSkipsTheRoute) {
  Start(R"(
routes:
  - id: bad
    uri: /hello
    upstream: {A}
    plugins:
      file-logger: {log_format: {a: "$uri"}}
#END
)");
  EXPECT_EQ(Get(gw_.port(), "/hello").status, 404);
  EXPECT_NE(gw_.Stderr().find("property \"path\" is required"), std::string::npos)
      << gw_.Stderr();
}

}  // namespace
}  // namespace turnpike::itest
