// file-logger: schema errors as APISIX words them, the entry it formats, and what it writes
// (the writer itself: tests/logging/log_writer_test.cc).

#include "plugins/file_logger/file_logger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "logging/log_writer.h"
#include "plugins/fake_plugin_context.h"
#include "plugins/file_logger/entry.h"
#include "support/fake_factory_context.h"
#include "support/files.h"

namespace turnpike::plugins::file_logger {
namespace {

using nlohmann::json;

// The fake context plus what the log phase reads.
class LogContext : public testing::FakePluginContext {
 public:
  void VisitRequestHeaders(HeaderVisitor& v) const override {
    for (const auto& [n, value] : request_headers) v.Visit(n, value);
  }
  void VisitResponseHeaders(HeaderVisitor& v) const override {
    for (const auto& [n, value] : response_headers) v.Visit(n, value);
  }
  RequestTiming timing() const override { return timing_; }
  RequestTiming timing_{1700000000123, 15, 10};
};

std::string Error(const json& conf) {
  StatusOr<Config> c = ParseConfig(conf);
  return c.ok() ? "ok" : c.status().message();
}

TEST(FileLoggerConfigTest, SchemaErrors) {
  EXPECT_EQ(Error(json::object()), "property \"path\" is required");
  EXPECT_EQ(Error({{"path", 1}}),
            "property \"path\" validation failed: wrong type: expected string, got number");
  EXPECT_EQ(Error({{"path", "a"}, {"log_format", "x"}}),
            "property \"log_format\" validation failed: wrong type: expected object, got string");
  EXPECT_EQ(Error({{"path", "a"}, {"include_resp_body", "yes"}}),
            "property \"include_resp_body\" validation failed: wrong type: expected boolean, "
            "got string");
  EXPECT_EQ(Error({{"path", "a"}, {"include_resp_body_expr", json::array()}}),
            "property \"include_resp_body_expr\" validation failed: expect array to have at "
            "least 1 items");
  EXPECT_EQ(Error({{"path", "a"}, {"max_resp_body_bytes", 0}}),
            "property \"max_resp_body_bytes\" validation failed: expected 0 to be at least 1");
  EXPECT_NE(Error({{"path", "a"}, {"match", json::parse(R"([[["arg_a", "bad-op", "1"]]])")}})
                .find("failed to validate the 'match' expression"),
            std::string::npos);
  EXPECT_NE(Error({{"path", "a"},
                   {"include_req_body_expr", json::parse(R"([["arg_a", "bad-op", "1"]])")}})
                .find("failed to validate the 'include_req_body_expr' expression"),
            std::string::npos);
  EXPECT_EQ(Error({{"path", "a"},
                   {"log_format", {{"a", "$no_such_var"}, {"b", {{"c", "$uri"}}}}},
                   {"match", json::parse(R"([[["arg_a", "==", "1"]]])")}}),
            "ok");
}

json Format(LogContext& ctx, const json& conf, CollectedBodies bodies = {}) {
  StatusOr<Config> c = ParseConfig(conf);
  EXPECT_TRUE(c.ok()) << c.status().message();
  std::string line;
  FormatEntry(ctx, c.value(), bodies, &line);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  return json::parse(line);
}

TEST(FileLoggerEntryTest, CustomFormatVariablesLiteralsAndNesting) {
  LogContext ctx;
  ctx.vars = {{"host", "example.com"},
              {"route_id", "r1"},
              {"service_id", "s1"},
              {"uri", "/a\"b"},
              {"request_method", "GET"}};
  json e = Format(ctx, {{"path", "x"},
                        {"log_format",
                         {{"host", "$host"},
                          {"missing", "$http_x_none"},
                          {"lit", "text"},
                          {"n", 3},
                          {"route_id", "overridden"},
                          {"req", {{"m", "$request_method"}, {"u", "$uri"}}}}}});
  EXPECT_EQ(e["host"], "example.com");
  EXPECT_FALSE(e.contains("missing"));
  EXPECT_EQ(e["lit"], "text");
  EXPECT_EQ(e["n"], 3);
  EXPECT_EQ(e["req"]["m"], "GET");
  EXPECT_EQ(e["req"]["u"], "/a\"b");
  EXPECT_EQ(e["route_id"], "r1");  // the matched route's, as get_custom_format_log sets it
  EXPECT_EQ(e["service_id"], "s1");
}

TEST(FileLoggerEntryTest, NestingDeeperThanFiveLevelsIsTruncated) {
  LogContext ctx;
  json deep = {{"v", "$uri"}};
  for (int i = 0; i < 6; ++i) deep = {{"d", deep}};
  ctx.vars = {{"uri", "/"}};
  json e = Format(ctx, {{"path", "x"}, {"log_format", deep}});
  EXPECT_EQ(e["d"]["d"]["d"]["d"]["d"], json::object());
}

TEST(FileLoggerEntryTest, FullLog) {
  LogContext ctx;
  ctx.vars = {{"scheme", "http"},
              {"host", "example.com"},
              {"server_port", "9080"},
              {"request_uri", "/p?a=1&a=2&b=x%20y&c"},
              {"request_method", "POST"},
              {"args", "a=1&a=2&b=x%20y&c"},
              {"request_length", "120"},
              {"bytes_sent", "300"},
              {"upstream_addr", "10.0.0.1:80"},
              {"route_id", "r1"},
              {"remote_addr", "1.2.3.4"},
              {"hostname", "box"}};
  ctx.request_headers = {{"Host", "example.com"}, {"X-A", "1"}, {"x-a", "2"}};
  ctx.response_headers = {{"Content-Type", "text/plain"}};
  ctx.status = 201;
  CollectedBodies bodies;
  bodies.response = "resp\n";
  bodies.request = "req";
  json e = Format(
      ctx, {{"path", "x"}, {"log_format_extra", {{"trace", "$host"}, {"route_id", "no"}}}}, bodies);
  EXPECT_EQ(e["request"]["url"], "http://example.com:9080/p?a=1&a=2&b=x%20y&c");
  EXPECT_EQ(e["request"]["uri"], "/p?a=1&a=2&b=x%20y&c");
  EXPECT_EQ(e["request"]["method"], "POST");
  EXPECT_EQ(e["request"]["headers"]["host"], "example.com");
  EXPECT_EQ(e["request"]["headers"]["x-a"], json::array({"1", "2"}));
  EXPECT_EQ(e["request"]["querystring"]["a"], json::array({"1", "2"}));
  EXPECT_EQ(e["request"]["querystring"]["b"], "x y");
  EXPECT_EQ(e["request"]["querystring"]["c"], true);
  EXPECT_EQ(e["request"]["size"], 120);
  EXPECT_EQ(e["request"]["body"], "req");
  EXPECT_EQ(e["response"]["status"], 201);
  EXPECT_EQ(e["response"]["headers"]["content-type"], "text/plain");
  EXPECT_EQ(e["response"]["size"], 300);
  EXPECT_EQ(e["response"]["body"], "resp\n");
  EXPECT_EQ(e["server"]["hostname"], "box");
  EXPECT_EQ(e["server"]["version"], TURNPIKE_VERSION);
  EXPECT_EQ(e["upstream"], "10.0.0.1:80");
  EXPECT_EQ(e["route_id"], "r1");
  EXPECT_EQ(e["service_id"], "");
  EXPECT_EQ(e["client_ip"], "1.2.3.4");
  EXPECT_EQ(e["start_time"], 1700000000123);
  EXPECT_EQ(e["latency"], 15);
  EXPECT_EQ(e["upstream_latency"], 10);
  EXPECT_EQ(e["apisix_latency"], 5);
  EXPECT_EQ(e["trace"], "example.com");  // log_format_extra adds, never replaces
}

TEST(FileLoggerEntryTest, FullLogWithoutRouteOrUpstream) {
  LogContext ctx;
  ctx.vars = {{"host", "example.com"}, {"request_uri", "/"}};
  ctx.timing_ = {1, 3, -1};
  ctx.status = 404;
  json e = Format(ctx, {{"path", "x"}});
  EXPECT_EQ(e["service_id"], "example.com");  // log-util: no route -> the host
  EXPECT_FALSE(e.contains("route_id"));
  EXPECT_FALSE(e.contains("upstream"));
  EXPECT_FALSE(e.contains("upstream_latency"));
  EXPECT_EQ(e["apisix_latency"], 3);
  EXPECT_EQ(e["request"]["querystring"], json::object());
}

TEST(FileLoggerEntryTest, JsonStringEscaping) {
  std::string out;
  AppendJsonString(&out, std::string_view("a\"b\\c/d\n\x01\xc3\xa9", 11));
  EXPECT_EQ(out, "\"a\\\"b\\\\c/d\\n\\u0001\xc3\xa9\"");
}

TEST(FileLoggerPluginTest, CollectsTheBodyAndHonoursMatch) {
  turnpike::testing::TempDir dir;
  auto writer = std::make_shared<logging::LogWriter>(std::chrono::milliseconds(5));
  FileLoggerFactory factory(writer);
  std::string path = dir.File("log.json");
  StatusOr<PluginConstSharedPtr> plugin =
      factory.Create({{"path", path},
                      {"include_resp_body", true},
                      {"max_resp_body_bytes", 4},
                      {"log_format", {{"u", "$uri"}}},
                      {"match", json::parse(R"([[["arg_log", "==", "1"]]])")}},
                     turnpike::testing::FakeFactoryContext::Default());
  ASSERT_TRUE(plugin.ok()) << plugin.status().message();
  const auto& p = static_cast<const FileLoggerPlugin&>(*plugin.value());
  EXPECT_EQ(p.phases(), static_cast<uint32_t>(kPhaseLog | kPhaseBodyFilter));
  LogContext ctx;
  ctx.vars = {{"uri", "/a"}, {"arg_log", "1"}};
  EXPECT_EQ(testing::FilterBody(p, ctx, {"abc", "def"}), "abcdef");  // untouched
  const CollectedResponse& collected = ctx.RequestState<CollectedResponse>(&p);
  EXPECT_EQ(collected.decision, CollectedResponse::Decision::kCollect);
  EXPECT_EQ(collected.body, "abcd");  // capped at 4
  p.Log(ctx);
  ctx.NextRequest();
  ctx.vars = {{"uri", "/b"}, {"arg_log", "0"}};
  p.Log(ctx);  // not matched: nothing written
  writer->FlushNow();
  EXPECT_EQ(turnpike::testing::ReadFile(path), "{\"u\":\"/a\"}\n");
}

// log_format keys and literals from YAML may not be UTF-8; compiling them used json::dump(),
// which throws on such bytes (found with tests/fuzz/yaml_config_fuzz). They are written as
// U+FFFD.
TEST(FileLoggerConfigTest, FormatKeysAndLiteralsThatAreNotUtf8) {
  const json conf = {{"path", "x"},
                     {"log_format", {{"k\xff", "$host"}, {"lit", json::array({"v\xfe"})}}}};
  std::string error;
  ASSERT_NO_THROW(error = Error(conf));
  EXPECT_EQ(error, "ok");
  LogContext ctx;
  ctx.vars = {{"host", "h"}};
  json e = Format(ctx, conf);
  EXPECT_EQ(e["k\xEF\xBF\xBD"], "h");
  EXPECT_EQ(e["lit"], json::array({"v\xEF\xBF\xBD"}));
}

}  // namespace
}  // namespace turnpike::plugins::file_logger
