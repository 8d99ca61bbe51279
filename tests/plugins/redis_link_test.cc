// limit-count's RedisLink against a real redis-server: the connection it drives itself
// (AUTH and SELECT before the calls, commands formatted into its own output buffer, answers
// matched to calls in order through its ring of calls) and the replies its parser builds in
// the link's own storage (integers, arrays, a string larger than a storage block, an array
// of hundreds of strings).

#include "plugins/limit_count/redis_link.h"

#include <hiredis/hiredis.h>
#include <uv.h>

#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "support/redis.h"

namespace turnpike::plugins::limit_count {
namespace {

using turnpike::testing::RedisServer;

// What one call was answered, copied out of the reply (valid during the call only).
struct Answer {
  int type = -1;  // REDIS_REPLY_*; -1: failed (error)
  std::vector<long long> integers;
  size_t elements = 0;
  size_t strings = 0;  // elements that are strings
  std::string str;     // a string, status or error reply
  std::string error;
};

class Recorder : public RedisStore::Waiter {
 public:
  void OnRedisReply(const redisReply* r, std::string_view error, uint64_t token) override {
    Answer a;
    if (r == nullptr) {
      a.error = std::string(error);
    } else {
      a.type = r->type;
      if (r->type == REDIS_REPLY_ARRAY) {
        a.elements = r->elements;
        for (size_t i = 0; i < r->elements; ++i) {
          if (r->element[i]->type == REDIS_REPLY_INTEGER) {
            a.integers.push_back(r->element[i]->integer);
          }
          if (r->element[i]->type == REDIS_REPLY_STRING) ++a.strings;
        }
      } else if (r->str != nullptr) {
        a.str.assign(r->str, r->len);
      }
    }
    if (answers.size() <= token) answers.resize(token + 1);
    answers[token] = a;
    ++received;
  }
  std::vector<Answer> answers;
  size_t received = 0;
};

class RedisLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisServer::Available()) GTEST_SKIP() << "redis-server is not installed";
    uv_loop_init(&loop_);
    looping_ = true;
  }
  void TearDown() override {
    if (!looping_) return;
    link_.reset();
    uv_run(&loop_, UV_RUN_NOWAIT);  // the link's handles close
    uv_loop_close(&loop_);
  }
  RedisLink& NewLink(const std::string& password, int database) {
    RedisConfig c;
    c.host = "127.0.0.1";
    c.port = redis_.port();
    c.password = password;
    c.database = database;
    link_ = std::make_unique<RedisLink>(&loop_, c);
    return *link_;
  }
  void RunUntil(size_t n) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (recorder_.received < n && std::chrono::steady_clock::now() < until) {
      uv_run(&loop_, UV_RUN_ONCE);
    }
  }
  int64_t Deadline() {
    uv_update_time(&loop_);
    return static_cast<int64_t>(uv_now(&loop_)) + 2000;
  }

  uv_loop_t loop_;
  bool looping_ = false;
  RedisServer redis_;
  Recorder recorder_;
  std::unique_ptr<RedisLink> link_;
};

TEST_F(RedisLinkTest, AuthenticatesSelectsAndAnswersAThousandPipelinedCallsInOrder) {
  ASSERT_TRUE(redis_.Start()) << redis_.error();
  redis_.Command({"CONFIG", "SET", "requirepass", "pw"});
  RedisLink& link = NewLink("pw", 3);
  // A thousand calls before the loop runs: one connect, AUTH, SELECT, the scripts loaded,
  // then every call (the ring grows past its 64 slots), answered in the order sent.
  constexpr size_t kCalls = 1000;
  for (size_t i = 0; i < kCalls; ++i) {
    link.IncrementFixed("plugin-limit-count:v1:/apisix/routes/1:alice", 60, 1, &recorder_, i);
  }
  EXPECT_EQ(link.in_flight(), kCalls + 4);  // AUTH, SELECT, two SCRIPT LOADs
  RunUntil(kCalls);
  ASSERT_EQ(recorder_.received, kCalls);
  for (size_t i = 0; i < kCalls; ++i) {
    const Answer& a = recorder_.answers[i];
    ASSERT_EQ(a.type, REDIS_REPLY_ARRAY) << i << ": " << a.error << a.str;
    ASSERT_EQ(a.integers.size(), 2u) << i;
    EXPECT_EQ(a.integers[0], static_cast<long long>(i + 1)) << i;  // the count, in order
    EXPECT_GT(a.integers[1], 0) << i;                              // milliseconds left
  }
  EXPECT_EQ(link.in_flight(), 0u);
  // In database 3 (the link's SELECT), behind the password.
  EXPECT_EQ(redis_.Command({"-a", "pw", "--no-auth-warning", "-n", "3", "GET",
                            "plugin-limit-count:v1:/apisix/routes/1:alice"}),
            "1000");
  EXPECT_EQ(redis_.Command({"-a", "pw", "--no-auth-warning", "-n", "0", "EXISTS",
                            "plugin-limit-count:v1:/apisix/routes/1:alice"}),
            "0");

  // Replies of other shapes, through the same storage: a string larger than a storage
  // block, an array of hundreds of strings, nil, a status.
  const std::string big(10'000, 'x');
  link.Query({"SET", "big", big}, &recorder_, kCalls, Deadline());
  link.Query({"GET", "big"}, &recorder_, kCalls + 1, Deadline());
  link.Query({"CONFIG", "GET", "*"}, &recorder_, kCalls + 2, Deadline());
  link.Query({"GET", "nothing"}, &recorder_, kCalls + 3, Deadline());
  RunUntil(kCalls + 4);
  ASSERT_EQ(recorder_.received, kCalls + 4);
  EXPECT_EQ(recorder_.answers[kCalls].type, REDIS_REPLY_STATUS);
  EXPECT_EQ(recorder_.answers[kCalls].str, "OK");
  EXPECT_EQ(recorder_.answers[kCalls + 1].type, REDIS_REPLY_STRING);
  EXPECT_EQ(recorder_.answers[kCalls + 1].str, big);
  const Answer& config = recorder_.answers[kCalls + 2];
  EXPECT_EQ(config.type, REDIS_REPLY_ARRAY);
  EXPECT_GT(config.elements, 200u);
  EXPECT_EQ(config.strings, config.elements);
  EXPECT_EQ(recorder_.answers[kCalls + 3].type, REDIS_REPLY_NIL);
}

TEST_F(RedisLinkTest, AWrongPasswordFailsTheCalls) {
  ASSERT_TRUE(redis_.Start()) << redis_.error();
  redis_.Command({"CONFIG", "SET", "requirepass", "pw"});
  RedisLink& link = NewLink("not-pw", 0);
  link.IncrementFixed("k", 60, 1, &recorder_, 0);
  RunUntil(1);
  ASSERT_EQ(recorder_.received, 1u);
  EXPECT_EQ(recorder_.answers[0].type, -1);
  EXPECT_NE(recorder_.answers[0].error.find("WRONGPASS"), std::string::npos)
      << recorder_.answers[0].error;
  EXPECT_EQ(link.in_flight(), 0u);
  // Inside the back-off the next call fails at once.
  link.IncrementFixed("k", 60, 1, &recorder_, 1);
  EXPECT_EQ(recorder_.received, 2u);
  EXPECT_EQ(recorder_.answers[1].error, "Redis unreachable");
}

}  // namespace
}  // namespace turnpike::plugins::limit_count
