// Reload at scale: 50,000 routes load, answer, and reload (picked up by the file watch) while
// clients keep sending requests that must all succeed. The timing figures for a Release
// build are in docs/benchmarks.md (bench/reload_scale.sh); this test only prints them.

#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "integration/itest.h"

namespace turnpike::itest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kRoutes = 50000;

// kRoutes routes spread over four upstreams: a third prefix routes (/p<i>/*), the rest exact
// (/api/svc<i>/items), a fifth with a host (h<i % 100>.example.com). `version` moves routes to
// other upstreams and adds /echo/v<version>. /hello goes to `hello_node`.
std::string ScaleRoutes(int version, const std::string& hello_node,
                        const std::vector<std::string>& nodes) {
  std::string y = "routes:\n";
  y.reserve(static_cast<size_t>(kRoutes) * 72);
  for (int i = 0; i < kRoutes; ++i) {
    std::string id = std::to_string(i);
    y += "  - id: r" + id + "\n";
    y += i % 3 == 0 ? "    uri: /p" + id + "/*\n" : "    uri: /api/svc" + id + "/items\n";
    if (i % 5 == 0) y += "    hosts: [h" + std::to_string(i % 100) + ".example.com]\n";
    y += "    upstream_id: u" + std::to_string((i + version) % 4) + "\n";
  }
  y += "  - {id: hello, uri: /hello, upstream_id: hello}\n";
  y += "  - {id: v, uri: /echo/v" + std::to_string(version) + ", upstream_id: hello}\n";
  y += "upstreams:\n  - id: hello\n    nodes: [" + hello_node + "]\n";
  for (int u = 0; u < 4; ++u) {
    y += "  - id: u" + std::to_string(u) + "\n    nodes: [" + nodes[u % nodes.size()] + "]\n";
  }
  y += "#END\n";
  return y;
}

// The "in X ms (read ..., parse ..., build ...)" part of the log line for `version`.
std::string LoadTiming(const std::string& log, int version) {
  size_t at = log.find("config version " + std::to_string(version) + " loaded");
  if (at == std::string::npos) return " (not logged)";
  std::string line = log.substr(at, log.find('\n', at) - at);
  size_t in = line.rfind(" in ");
  return in == std::string::npos ? line : line.substr(in);
}

TEST(ReloadScaleTest, FiftyThousandRoutesLoadServeAndReloadUnderLoad) {
  std::vector<std::unique_ptr<Backend>> backends = StartBackends({"A", "B"});
  ASSERT_EQ(backends.size(), 2u);
  std::vector<std::string> nodes = {Node(backends[0]->port()), Node(backends[1]->port())};

  Turnpike gw(kTurnpikeBin);
  auto started = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(StartGateway(gw, ScaleRoutes(0, nodes[0], nodes)));
  const int port = gw.port();
  std::cout << "[          ] " << kRoutes << " routes: up after "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started)
                   .count()
            << " ms; first load" << LoadTiming(gw.Stderr(), 1) << "\n";

  EXPECT_EQ(BackendOf(Get(port, "/hello")), "A");
  EXPECT_EQ(Get(port, "/echo/v0").status, 200);
  // r1: exact, u1 (B); r3: prefix, u3 (B); r10: exact with host h10, u2 (A); r6: prefix, u2.
  EXPECT_EQ(BackendOf(Get(port, "/api/svc1/items")), "B");
  EXPECT_EQ(BackendOf(Get(port, "/p3/anything/below")), "B");
  EXPECT_EQ(BackendOf(Get(port, "/api/svc10/items", {{"Host", "h10.example.com"}})), "A");
  EXPECT_EQ(Get(port, "/api/svc10/items").status, 404) << "host route matched without its host";
  EXPECT_EQ(BackendOf(Get(port, "/p6/")), "A");
  EXPECT_EQ(Get(port, "/api/svc1/items/more").status, 404);

  // Clients keep going on keep-alive connections while version 1 is written (no SIGHUP).
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      HttpConnection conn;
      const std::string request = HttpRequest{"GET", "/hello", {}, ""}.Serialize(port);
      while (!stop.load()) {
        if (!conn.connected() && !conn.Connect(port)) {
          ++failed;
          std::this_thread::sleep_for(milliseconds(10));
          continue;
        }
        HttpResponse r = conn.RoundTrip(request);
        (r.status == 200 ? ok : failed)++;
        if (!r.ok() || r.ConnectionClosing()) conn.Close();
      }
    });
  }
  int before = ok.load();
  PollUntil([&] { return ok.load() > before + 100; }, seconds(5));
  ASSERT_TRUE(gw.RewriteRoutes(ScaleRoutes(1, nodes[1], nodes)));
  bool live =
      PollUntil([&] { return Get(port, "/echo/v1").status == 200; }, seconds(60), milliseconds(20));
  int during = ok.load() - before;
  stop = true;
  for (std::thread& t : clients) t.join();

  EXPECT_TRUE(live) << "version 1 not live 60 s after the rewrite";
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GT(during, 100) << "workers stopped serving during the reload";
  std::cout << "[          ] reload" << LoadTiming(gw.Stderr(), 2) << "; " << during
            << " requests served meanwhile\n";
  // Each worker switches on its own loop, so a connection may still reach one that has not
  // yet: ask until the new version answers.
  auto eventually = [](const std::function<bool()>& check) { return PollUntil(check, seconds(5)); };
  EXPECT_TRUE(eventually([&] { return BackendOf(Get(port, "/hello")) == "B"; }));
  EXPECT_TRUE(eventually([&] {
    HttpResponse r = Get(port, "/echo/v0");
    return r.status == 404 && BackendOf(r).empty();
  })) << "the route of version 0 still exists";
  // r1 moved from u1 (B) to u2 (A).
  EXPECT_TRUE(eventually([&] { return BackendOf(Get(port, "/api/svc1/items")) == "A"; }));
  EXPECT_TRUE(gw.process()->Running());
}

}  // namespace
}  // namespace turnpike::itest
