// limit-count's redis-cluster store against a real three-master Redis Cluster (started by the
// test on loopback): the hash slot function, routing by slot to every master, two links
// (two workers) sharing one count, a slot migrated mid-test (-ASK, then -MOVED) with the
// count carried on, a master killed (its calls fail, the others' go on) and restarted, a
// failover to a replica learnt from the failed connection, and
// the bound on redirects and the one deadline that covers them (a fake node that always
// answers -MOVED).

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/limit_count/cluster_link.h"
#include "plugins/limit_count/cluster_slot.h"
#include "support/net.h"
#include "support/redis_cluster.h"

namespace turnpike::plugins::limit_count {
namespace {

using turnpike::testing::RedisCluster;
using turnpike::testing::RedisServer;

TEST(ClusterSlotTest, Crc16AndHashTagsFollowTheClusterSpecification) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // the specification's check value
  EXPECT_EQ(Crc16(""), 0);
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot("bar"), 5061);
  // Only the tag is hashed: "{user1000}.following" and "{user1000}.followers" share a slot.
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("{user1000}.followers"), KeySlot("user1000"));
  // An empty first tag means the whole key; only the first '{' counts.
  EXPECT_EQ(KeySlot("foo{}{bar}"), Crc16("foo{}{bar}") & 16383);
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
  EXPECT_EQ(KeySlot("{"), Crc16("{") & 16383);
}

// A RedisStore waiter that records its answers: [count, ms left] or the error.
struct Answer {
  bool ok = false;
  int64_t count = 0;
  int64_t ttl_ms = 0;
  std::string error;
};

class Recorder : public RedisStore::Waiter {
 public:
  void OnRedisReply(const redisReply* r, std::string_view error, uint64_t token) override {
    Answer a;
    if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER) {
      a.ok = true;
      a.count = r->element[0]->integer;
      a.ttl_ms = r->element[1]->integer;
    } else if (r != nullptr && r->type == REDIS_REPLY_ERROR) {
      a.error = std::string(r->str, r->len);
    } else {
      a.error = error.empty() ? "unexpected reply" : std::string(error);
    }
    if (answers.size() <= token) answers.resize(token + 1);
    answers[token] = a;
    ++received;
  }
  std::vector<Answer> answers;
  size_t received = 0;
};

class ClusterLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
    ASSERT_TRUE(cluster_.Start()) << cluster_.error();
    uv_loop_init(&loop_);
  }
  void TearDown() override {
    if (!RedisServer::Available()) return;
    links_.clear();
    uv_run(&loop_, UV_RUN_NOWAIT);  // the links' handles close
    uv_loop_close(&loop_);
  }

  ClusterLink& NewLink(int seed = 0, int timeout_ms = 1000) {
    RedisConfig c;
    c.cluster_nodes = {{"127.0.0.1", cluster_.port(seed)}};
    c.cluster_name = "test";
    c.timeout_ms = timeout_ms;
    links_.push_back(std::make_unique<ClusterLink>(&loop_, c));
    return *links_.back();
  }
  // Runs the loop until `n` answers in all (each pass waits for I/O or a timer; a 10 ms
  // timer keeps passes short), at most 5 s.
  void RunUntil(size_t n) {
    uv_timer_t tick;
    uv_timer_init(&loop_, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 10, 10);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (recorder_.received < n && std::chrono::steady_clock::now() < until) {
      uv_run(&loop_, UV_RUN_ONCE);
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
  }
  // One script call through `link`, waited for.
  Answer Incr(ClusterLink& link, const std::string& key) {
    // The loop's clock (uv_now, which deadlines use) moves only while it runs; the test may
    // have spent seconds outside it (forming a cluster, waiting for a failover).
    uv_update_time(&loop_);
    size_t token = recorder_.received;
    link.IncrementFixed(key, 60, 1, &recorder_, token);
    RunUntil(token + 1);
    EXPECT_EQ(recorder_.received, token + 1) << "no answer for " << key;
    return recorder_.answers.size() > token ? recorder_.answers[token] : Answer{};
  }
  // A key whose slot node `node` serves, made from `prefix`.
  std::string KeyOn(int node, const std::string& prefix) {
    for (int i = 0;; ++i) {
      std::string key = prefix + std::to_string(i);
      if (cluster_.OwnerOf(KeySlot(key)) == node) return key;
    }
  }

  RedisCluster cluster_;
  uv_loop_t loop_;
  Recorder recorder_;
  std::vector<std::unique_ptr<ClusterLink>> links_;
};

// The test support itself: a node whose port another process took meanwhile (parallel tests
// pick ports the same way) starts on another one, with a bus port chosen again too, and the
// cluster forms on the ports it really has.
TEST(RedisClusterSupportTest, ANodeWhosePortWasTakenStartsOnAnother) {
  if (!RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
  RedisCluster cluster(1);
  const int planned = cluster.port(0);
  const int planned_bus = cluster.bus_port(0);
  int bound = 0;
  int fd = turnpike::testing::ListenLoopback(planned, &bound);
  int bus_fd = turnpike::testing::ListenLoopback(planned_bus, &bound);
  ASSERT_GE(fd, 0);
  ASSERT_GE(bus_fd, 0);
  EXPECT_TRUE(cluster.Start()) << cluster.error();
  close(fd);
  close(bus_fd);
  EXPECT_NE(cluster.port(0), planned);
  EXPECT_NE(cluster.bus_port(0), planned_bus);
  EXPECT_EQ(cluster.Addresses().front(), "127.0.0.1:" + std::to_string(cluster.port(0)));
}

TEST_F(ClusterLinkTest, SlotsAgreeWithTheCluster) {
  for (std::string key : {"foo", "bar", "plugin-limit-count:v1:/apisix/routes/1:123:10.0.0.1",
                          "{user1000}.following", "a{b}c", "x{}y", "é"}) {
    EXPECT_EQ(KeySlot(key), cluster_.Slot(key)) << key;
  }
}

TEST_F(ClusterLinkTest, CountsOnEveryMasterAndTwoLinksShareOneCount) {
  ClusterLink& a = NewLink(0);
  ClusterLink& b = NewLink(2);  // another worker, another seed
  std::vector<std::string> keys;
  for (int node = 0; node < 3; ++node) keys.push_back(KeyOn(node, "counter:"));
  for (int round = 1; round <= 3; ++round) {
    for (const std::string& key : keys) {
      Answer r = Incr(round % 2 == 1 ? a : b, key);
      ASSERT_TRUE(r.ok) << key << ": " << r.error;
      EXPECT_EQ(r.count, round) << key;
      EXPECT_GT(r.ttl_ms, 0);
      EXPECT_LE(r.ttl_ms, 60'000);
    }
  }
  // Each key lives on its own master, with the count and the window.
  for (const std::string& key : keys) {
    int owner = cluster_.OwnerOf(KeySlot(key));
    EXPECT_EQ(cluster_.node(owner).Command({"GET", key}), "3") << key;
    int ttl = std::stoi(cluster_.node(owner).Command({"TTL", key}));
    EXPECT_GT(ttl, 50);
  }
  EXPECT_EQ(a.connections(), 3u);  // one per master, the seed being one of them
  EXPECT_GE(a.refreshes(), 1u);
  EXPECT_EQ(a.in_flight(), 0u);

  // Pipelined: many calls in flight at once, on all three masters, answered in full.
  size_t before = recorder_.received;
  for (int i = 0; i < 300; ++i) {
    a.IncrementFixed(keys[static_cast<size_t>(i % 3)], 60, 1, &recorder_, before + i);
  }
  RunUntil(before + 300);
  ASSERT_EQ(recorder_.received, before + 300);
  for (size_t i = before; i < before + 300; ++i) ASSERT_TRUE(recorder_.answers[i].ok) << i;
  for (const std::string& key : keys) {
    EXPECT_EQ(cluster_.node(cluster_.OwnerOf(KeySlot(key))).Command({"GET", key}), "103");
  }
}

TEST_F(ClusterLinkTest, AMigratedSlotIsFollowedThroughAskThenMovedAndKeepsCounting) {
  ClusterLink& link = NewLink();
  // Two keys of one slot (one hash tag): one moved early, one created during the migration.
  const std::string old_key = "{" + KeyOn(0, "tag") + "}:old";
  const std::string new_key = "{" + KeyOn(0, "tag") + "}:new";
  const int slot = KeySlot(old_key);
  ASSERT_EQ(slot, KeySlot(new_key));
  ASSERT_EQ(cluster_.OwnerOf(slot), 0);
  for (int i = 1; i <= 3; ++i) ASSERT_EQ(Incr(link, old_key).count, i);
  uint64_t moved = link.moved();

  ASSERT_TRUE(cluster_.BeginMigration(slot, 1)) << cluster_.error();
  EXPECT_EQ(Incr(link, old_key).count, 4);  // still on the old owner: no redirect
  EXPECT_EQ(link.asked(), 0u);
  ASSERT_TRUE(cluster_.MoveKey(slot, old_key)) << cluster_.error();
  // The old owner no longer has the key: -ASK, then ASKING + the script on the new owner.
  Answer r = Incr(link, old_key);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.count, 5);
  EXPECT_GT(r.ttl_ms, 0);  // MIGRATE kept the window
  EXPECT_EQ(link.asked(), 1u);
  // (The key's value cannot be read without ASKING; where it lives can.)
  const std::string s = std::to_string(slot);
  EXPECT_EQ(cluster_.node(0).Command({"CLUSTER", "COUNTKEYSINSLOT", s}), "0");
  EXPECT_EQ(cluster_.node(1).Command({"CLUSTER", "COUNTKEYSINSLOT", s}), "1");
  r = Incr(link, new_key);  // a key the old owner never had goes to the new owner too
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(link.asked(), 2u);  // -ASK leaves the map alone
  EXPECT_EQ(cluster_.node(1).Command({"CLUSTER", "COUNTKEYSINSLOT", s}), "2");
  EXPECT_EQ(link.moved(), moved);

  ASSERT_TRUE(cluster_.FinishMigration(slot)) << cluster_.error();
  r = Incr(link, old_key);  // -MOVED from the old owner, then the new owner
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.count, 6);
  EXPECT_EQ(link.moved(), moved + 1);
  EXPECT_EQ(Incr(link, old_key).count, 7);  // straight to the new owner now
  EXPECT_EQ(Incr(link, new_key).count, 2);
  EXPECT_EQ(link.moved(), moved + 1);
  EXPECT_EQ(link.asked(), 2u);
  EXPECT_EQ(cluster_.node(1).Command({"GET", old_key}), "7");
  EXPECT_EQ(cluster_.node(1).Command({"GET", new_key}), "2");
}

TEST_F(ClusterLinkTest, AKilledMasterFailsItsCallsOnlyAndComesBack) {
  ClusterLink& link = NewLink(0, 300);
  const std::string on_1 = KeyOn(1, "victim:");
  const std::string on_0 = KeyOn(0, "bystander:");
  ASSERT_EQ(Incr(link, on_1).count, 1);
  ASSERT_EQ(Incr(link, on_0).count, 1);
  cluster_.Kill(1);
  Answer r = Incr(link, on_1);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(Incr(link, on_0).count, 2);  // the other masters serve on
  ASSERT_TRUE(cluster_.Restart(1)) << cluster_.error();
  // Back within the link's reconnect back-off; the restarted master has lost its data.
  Answer back;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(12);
  while (std::chrono::steady_clock::now() < until) {
    back = Incr(link, on_1);
    if (back.ok) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(back.ok) << back.error;
  EXPECT_EQ(back.count, 1);
  EXPECT_EQ(Incr(link, on_0).count, 3);
}

TEST_F(ClusterLinkTest, AFailoverIsLearntFromTheFailedConnection) {
  const int replica = cluster_.AddReplica(1);
  ASSERT_GE(replica, 0) << cluster_.error();
  ClusterLink& link = NewLink(0, 300);
  const std::string key = KeyOn(1, "failover:");
  for (int i = 1; i <= 3; ++i) {
    Answer a = Incr(link, key);
    ASSERT_TRUE(a.ok) << a.error;
    ASSERT_EQ(a.count, i);
  }
  // The replica has the count before its master goes (WAIT would only wait for its own
  // connection's writes): its replication offset reaches the master's.
  auto offset = [&](int node, const std::string& field) {
    std::string info = cluster_.node(node).Command({"INFO", "replication"});
    size_t at = info.find(field + ":");
    return at == std::string::npos ? -1 : std::stoll(info.substr(at + field.size() + 1));
  };
  const long long written = offset(1, "master_repl_offset");
  ASSERT_GT(written, 0);
  auto synced_until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (offset(replica, "slave_repl_offset") < written &&
         std::chrono::steady_clock::now() < synced_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(offset(replica, "slave_repl_offset"), written);
  uint64_t maps = link.refreshes();
  cluster_.Kill(1);
  EXPECT_FALSE(Incr(link, key).ok);
  // The other masters fail the dead one and elect its replica (node timeout 1 s).
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (cluster_.node(replica).Command({"ROLE"}).rfind("master", 0) != 0 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(cluster_.node(replica).Command({"ROLE"}).rfind("master", 0), 0u)
      << cluster_.node(replica).Command({"ROLE"});
  cluster_.PromoteReplica(replica, 1);
  // No -MOVED comes from a dead node: the failed calls' refreshes learn the new master.
  Answer r;
  until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    r = Incr(link, key);
    if (r.ok) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.count, 4);  // counting goes on where the replica left it
  EXPECT_GT(link.refreshes(), maps);
  EXPECT_EQ(cluster_.node(replica).Command({"GET", key}), "4");
}

// One whole RESP command ("*<n>\r\n" then n "$<len>\r\n<bytes>\r\n") off the front of `in`.
bool TakeCommand(std::string* in, std::vector<std::string>* args) {
  args->clear();
  size_t at = 0;
  auto line = [&](char kind, size_t* value) {
    if (at >= in->size() || (*in)[at] != kind) return false;
    size_t end = in->find("\r\n", at);
    if (end == std::string::npos) return false;
    *value = std::stoul(in->substr(at + 1, end - at - 1));
    at = end + 2;
    return true;
  };
  size_t count = 0;
  if (!line('*', &count)) return false;
  for (size_t i = 0; i < count; ++i) {
    size_t len = 0;
    if (!line('$', &len) || at + len + 2 > in->size()) return false;
    args->push_back(in->substr(at, len));
    at += len + 2;
  }
  in->erase(0, at);
  return true;
}

// A fake cluster node on loopback that answers -MOVED to itself to every script call (after
// `delay_ms`), like a cluster whose nodes disagree: SCRIPT LOAD gets a SHA, CLUSTER SLOTS no
// slots (so the link never learns a map). One connection, served by its own thread.
class MovingNode {
 public:
  explicit MovingNode(int delay_ms) : delay_ms_(delay_ms) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        listen(listener_, 4) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~MovingNode() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  int commands() const { return commands_.load(); }

 private:
  void Serve() {
    int fd = accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    const std::string moved = "-MOVED 866 127.0.0.1:" + std::to_string(port_) + "\r\n";
    std::string in;
    char buf[4096];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
      std::string out;
      std::vector<std::string> args;
      while (TakeCommand(&in, &args)) {
        ++commands_;
        if (args.size() >= 2 && args[1] == "LOAD") {
          out += "$40\r\n" + std::string(40, 'a') + "\r\n";
        } else if (args.size() >= 2 && args[1] == "SLOTS") {
          out += "*0\r\n";
        } else {
          out += moved;
        }
      }
      if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
      if (!out.empty() && write(fd, out.data(), out.size()) < 0) break;
    }
    close(fd);
  }

  int delay_ms_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> commands_{0};
  std::thread thread_;
};

// One call through a ClusterLink seeded with `port`, run to its answer (at most 5 s): the
// fixed window's script, or with `sliding` the sliding window's GET and script.
Answer OneCall(int port, int timeout_ms, uint64_t* moved, std::chrono::milliseconds* took,
               bool sliding = false) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  Recorder recorder;
  {
    RedisConfig c;
    c.cluster_nodes = {{"127.0.0.1", port}};
    c.timeout_ms = timeout_ms;
    ClusterLink link(&loop, c);
    auto start = std::chrono::steady_clock::now();
    if (sliding) {
      link.IncrementSliding({"hello.2.counter", "hello.1.counter", 60, 30'000, 10, 1}, &recorder,
                            0);
    } else {
      link.IncrementFixed("hello", 60, 1, &recorder, 0);
    }
    while (recorder.received == 0 &&
           std::chrono::steady_clock::now() < start + std::chrono::seconds(5)) {
      uv_run(&loop, UV_RUN_NOWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    *took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start);
    *moved = link.moved();
  }
  uv_run(&loop, UV_RUN_NOWAIT);
  uv_loop_close(&loop);
  return recorder.received == 1 ? recorder.answers[0] : Answer{false, 0, 0, "no answer"};
}

TEST(ClusterLinkBoundTest, RedirectsAreBounded) {
  MovingNode node(0);
  ASSERT_NE(node.port(), 0);
  uint64_t moved = 0;
  std::chrono::milliseconds took{};
  Answer a = OneCall(node.port(), 2000, &moved, &took);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "too many cluster redirects");
  EXPECT_EQ(moved, static_cast<uint64_t>(ClusterLink::kMaxRedirects + 1));
  EXPECT_GE(node.commands(), ClusterLink::kMaxRedirects + 1);
}

TEST(ClusterLinkBoundTest, OneDeadlineCoversEveryRedirect) {
  // Each answer takes 100 ms and the call has 250: it fails at its deadline, after two or
  // three redirects, not at 5 x 100 ms nor at 250 ms per hop.
  MovingNode node(100);
  ASSERT_NE(node.port(), 0);
  uint64_t moved = 0;
  std::chrono::milliseconds took{};
  Answer a = OneCall(node.port(), 250, &moved, &took);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "timeout");
  EXPECT_GE(moved, 1u);
  EXPECT_LT(moved, static_cast<uint64_t>(ClusterLink::kMaxRedirects));
  EXPECT_GE(took.count(), 240);
  EXPECT_LT(took.count(), 450);
}

TEST(ClusterLinkBoundTest, OneDeadlineCoversASlidingCallsRedirects) {
  // The sliding window's GET of the previous counter is redirected like a script call, its
  // redirects bounded and under the call's one deadline.
  MovingNode bounded(0);
  ASSERT_NE(bounded.port(), 0);
  uint64_t moved = 0;
  std::chrono::milliseconds took{};
  Answer a = OneCall(bounded.port(), 2000, &moved, &took, /*sliding=*/true);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "too many cluster redirects");
  EXPECT_EQ(moved, static_cast<uint64_t>(ClusterLink::kMaxRedirects + 1));
  MovingNode slow(100);
  ASSERT_NE(slow.port(), 0);
  a = OneCall(slow.port(), 250, &moved, &took, /*sliding=*/true);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "timeout");
  EXPECT_GE(moved, 1u);
  EXPECT_GE(took.count(), 240);
  EXPECT_LT(took.count(), 450);
}

}  // namespace
}  // namespace turnpike::plugins::limit_count
