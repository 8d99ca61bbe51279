// The command line: --version, and config validation with `turnpike check -c` / `-t -c`
// (exit 0 when fine; exit 1 with `file:line:col: yaml.path: message` lines on stderr).

#include <cctype>
#include <string>
#include <vector>

#include "integration/itest.h"
#include "support/files.h"
#include "support/process.h"

namespace turnpike::itest {
namespace {

// One `file:line:col: yaml.path: message` line of checker output.
struct ErrorLine {
  std::string file;
  int line = 0;
  int col = 0;
  std::string path;
  std::string message;
};

// Parses every stderr line that has the location format; other lines are ignored.
std::vector<ErrorLine> ParseErrorLines(const std::string& text) {
  std::vector<ErrorLine> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string l = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    // Find ":<digits>:<digits>: " - the file name is everything before it.
    for (size_t i = l.find(':'); i != std::string::npos; i = l.find(':', i + 1)) {
      size_t p = i + 1, line_start = p;
      while (p < l.size() && std::isdigit(static_cast<unsigned char>(l[p]))) ++p;
      if (p == line_start || p >= l.size() || l[p] != ':') continue;
      size_t col_start = ++p;
      while (p < l.size() && std::isdigit(static_cast<unsigned char>(l[p]))) ++p;
      if (p == col_start || l.compare(p, 2, ": ") != 0) continue;
      ErrorLine e;
      e.file = l.substr(0, i);
      e.line = std::stoi(l.substr(line_start, col_start - 1 - line_start));
      e.col = std::stoi(l.substr(col_start, p - col_start));
      std::string rest = l.substr(p + 2);
      size_t sep = rest.find(": ");
      if (sep == std::string::npos) break;
      e.path = rest.substr(0, sep);
      e.message = rest.substr(sep + 2);
      out.push_back(e);
      break;
    }
  }
  return out;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }

  void WriteFiles(const std::string& config, const std::string& routes) {
    ASSERT_TRUE(WriteFile(dir_.File("config.yaml"), config));
    ASSERT_TRUE(WriteFile(dir_.File("apisix.yaml"), routes));
  }

  RunResult Check(bool dash_t) {
    std::vector<std::string> args = {"-c", dir_.File("config.yaml")};
    args.insert(args.begin(), dash_t ? "-t" : "check");
    return RunProcess(kTurnpikeBin, args, std::chrono::seconds(20));
  }

  static constexpr char kGoodRoutes[] = R"(routes:
  - uri: /hello
    upstream_id: 1
  - uri: /echo/*
    hosts: ["*.foo.com"]
    methods: [GET, POST]
    upstream:
      nodes: [{host: 127.0.0.1, port: 1980, weight: 1}]
      timeout: {connect: 1, send: 1, read: 1}
upstreams:
  - id: 1
    nodes: {"127.0.0.1:1980": 1}
#END
)";

  TempDir dir_;
};

TEST_F(CliTest, VersionPrintsNameAndVersion) {
  RunResult r = RunProcess(kTurnpikeBin, {"--version"});
  ASSERT_TRUE(r.status.has_value()) << r.error;
  EXPECT_TRUE(r.status->Success()) << r.status->ToString() << "\n" << r.err;
  ASSERT_EQ(r.out.rfind("turnpike ", 0), 0u) << "stdout: " << r.out;
  std::string version = r.out.substr(9);
  ASSERT_FALSE(version.empty());
  EXPECT_EQ(version.back(), '\n');
  version.pop_back();
  EXPECT_FALSE(version.empty());
  EXPECT_EQ(version.find_first_of(" \n"), std::string::npos) << r.out;
}

TEST_F(CliTest, CheckAcceptsValidFiles) {
  ASSERT_NO_FATAL_FAILURE(WriteFiles(GatewayConfigYaml(FreePort()), kGoodRoutes));
  for (bool dash_t : {false, true}) {
    RunResult r = Check(dash_t);
    ASSERT_TRUE(r.status.has_value()) << r.error;
    EXPECT_TRUE(r.status->Success())
        << (dash_t ? "-t" : "check") << ": " << r.status->ToString() << "\nstderr:\n"
        << r.err;
  }
}

TEST_F(CliTest, CheckReportsRouteErrorsWithLocation) {
  ASSERT_NO_FATAL_FAILURE(WriteFiles(GatewayConfigYaml(FreePort()), R"(routes:
  - uri: /ok
    upstream_id: u1
  - uri: /bad
    methods: [GETT]
    upstream_id: u1
upstreams:
  - id: u1
    nodes: [{host: 127.0.0.1, port: 70000, weight: 1}]
#END
)"));
  for (bool dash_t : {false, true}) {
    SCOPED_TRACE(dash_t ? "-t" : "check");
    RunResult r = Check(dash_t);
    ASSERT_TRUE(r.status.has_value()) << r.error;
    EXPECT_TRUE(r.status->exited && r.status->code == 1) << r.status->ToString();
    std::vector<ErrorLine> errors = ParseErrorLines(r.err);
    bool method_error = false, port_error = false;
    for (const ErrorLine& e : errors) {
      EXPECT_TRUE(EndsWith(e.file, "apisix.yaml")) << e.file;
      EXPECT_GT(e.col, 0);
      EXPECT_FALSE(e.message.empty());
      if (e.line == 5 && e.path.rfind("routes[1]", 0) == 0) method_error = true;
      if (e.line == 9 && e.path.rfind("upstreams[0]", 0) == 0) port_error = true;
    }
    EXPECT_TRUE(method_error) << "no `apisix.yaml:5:N: routes[1]...` line in:\n" << r.err;
    EXPECT_TRUE(port_error) << "no `apisix.yaml:9:N: upstreams[0]...` line in:\n" << r.err;
  }
}

TEST_F(CliTest, CheckReportsConfigErrorsWithLocation) {
  std::string config = GatewayConfigYaml(FreePort());
  size_t port_line = config.find("      port: ");
  ASSERT_NE(port_line, std::string::npos);
  config.replace(port_line, config.find('\n', port_line) - port_line, "      port: notaport");
  ASSERT_NO_FATAL_FAILURE(WriteFiles(config, kGoodRoutes));
  RunResult r = Check(false);
  ASSERT_TRUE(r.status.has_value()) << r.error;
  EXPECT_TRUE(r.status->exited && r.status->code == 1) << r.status->ToString();
  bool found = false;
  for (const ErrorLine& e : ParseErrorLines(r.err)) {
    if (EndsWith(e.file, "config.yaml") && e.line == 4 &&
        e.path.rfind("apisix.node_listen", 0) == 0) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << "no `config.yaml:4:N: apisix.node_listen...` line in:\n" << r.err;
}

TEST_F(CliTest, CheckRejectsRoutesFileWithoutEndMarker) {
  std::string routes = kGoodRoutes;
  routes.erase(routes.find("#END"));
  ASSERT_NO_FATAL_FAILURE(WriteFiles(GatewayConfigYaml(FreePort()), routes));
  RunResult r = Check(false);
  ASSERT_TRUE(r.status.has_value()) << r.error;
  EXPECT_TRUE(r.status->exited && r.status->code == 1) << r.status->ToString() << "\n" << r.err;
  EXPECT_FALSE(r.err.empty());
}

TEST_F(CliTest, CheckRejectsCollectionThatIsNotAList) {
  ASSERT_NO_FATAL_FAILURE(
      WriteFiles(GatewayConfigYaml(FreePort()), "upstreams: []\nroutes: {uri: /x}\n#END\n"));
  RunResult r = Check(false);
  ASSERT_TRUE(r.status.has_value()) << r.error;
  EXPECT_TRUE(r.status->exited && r.status->code == 1) << r.status->ToString() << "\n" << r.err;
  EXPECT_NE(r.err.find("apisix.yaml:2:9: routes: wrong type: expected list, got map; the file is "
                       "rejected"),
            std::string::npos)
      << r.err;
}

TEST_F(CliTest, DaemonRefusesToStartWithInvalidConfig) {
  std::string config = GatewayConfigYaml(FreePort());
  config.replace(config.find("role: data_plane"), 16, "role: [not, a, role]");
  ASSERT_NO_FATAL_FAILURE(WriteFiles(config, kGoodRoutes));
  RunResult r =
      RunProcess(kTurnpikeBin, {"-c", dir_.File("config.yaml")}, std::chrono::seconds(10));
  ASSERT_TRUE(r.status.has_value()) << "turnpike kept running with an invalid config.yaml";
  EXPECT_FALSE(r.status->Success()) << r.err;
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
}  // namespace turnpike::itest
