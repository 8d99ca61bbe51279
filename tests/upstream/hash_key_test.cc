// HashKey (upstream/hash_key.h): the string chash hashes for each hash_on, as APISIX's
// chash.lua fetches it, and the $remote_addr fallback when it is missing.
#include "upstream/hash_key.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "upstream/crc32.h"

namespace turnpike::upstream {
namespace {

// Request variables from a map: "remote_addr", "http:x-user" (lowercase, dashes),
// "arg:user", "cookie:sid".
class FakeVars final : public RequestVars {
 public:
  std::map<std::string, std::string> values;
  int lookups = 0;

  std::optional<std::string_view> Get(const VarRef& var) override {
    ++lookups;
    std::string key;
    switch (var.kind) {
      case VarRef::Kind::kBuiltin:
        key = std::string(BuiltinVarName(var.builtin));
        break;
      case VarRef::Kind::kHeader:
        key = "http:" + var.name;
        break;
      case VarRef::Kind::kArg:
        key = "arg:" + var.name;
        break;
      case VarRef::Kind::kCookie:
        key = "cookie:" + var.name;
        break;
      default:
        return std::nullopt;
    }
    auto it = values.find(key);
    if (it == values.end()) return std::nullopt;
    return std::string_view(it->second);
  }
};

class HashKeyTest : public ::testing::Test {
 protected:
  uint32_t Hash(HashOn on, std::string_view key) {
    return HashKey::Compile(on, key).Hash(vars_, &scratch_);
  }
  FakeVars vars_;
  std::string scratch_;
};

TEST_F(HashKeyTest, EachSourceHashesItsValue) {
  vars_.values = {{"remote_addr", "10.1.1.1"}, {"uri", "/a/b"},        {"arg:user", "ann"},
                  {"http:x-user", "bob"},      {"cookie:sid", "s-42"}, {"host", "example.com"},
                  {"http:x-tenant", "t1"}};
  EXPECT_EQ(Hash(HashOn::kVars, "uri"), Crc32("/a/b"));
  EXPECT_EQ(Hash(HashOn::kVars, "arg_user"), Crc32("ann"));
  EXPECT_EQ(Hash(HashOn::kVars, "remote_addr"), Crc32("10.1.1.1"));
  EXPECT_EQ(Hash(HashOn::kHeader, "X-User"), Crc32("bob"));
  EXPECT_EQ(Hash(HashOn::kHeader, "x_user"), Crc32("bob")) << "nginx's $http_x_user";
  EXPECT_EQ(Hash(HashOn::kCookie, "sid"), Crc32("s-42"));
  EXPECT_EQ(Hash(HashOn::kVarsCombinations, "$http_x_tenant-$arg_user"), Crc32("t1-ann"));
  EXPECT_EQ(Hash(HashOn::kVarsCombinations, "$host$missing"), Crc32("example.com"))
      << "one variable resolved is enough";
}

TEST_F(HashKeyTest, MissingKeysFallBackToRemoteAddr) {
  vars_.values = {{"remote_addr", "10.9.9.9"}};
  const uint32_t client = Crc32("10.9.9.9");
  EXPECT_EQ(Hash(HashOn::kVars, "arg_user"), client);
  EXPECT_EQ(Hash(HashOn::kHeader, "X-User"), client);
  EXPECT_EQ(Hash(HashOn::kCookie, "sid"), client);
  EXPECT_EQ(Hash(HashOn::kConsumer, ""), client) << "no consumer: APISIX's remote_addr";
  EXPECT_EQ(Hash(HashOn::kVarsCombinations, "$http_a-$arg_b"), client)
      << "no variable resolved: nil in APISIX";
  EXPECT_EQ(Hash(HashOn::kVarsCombinations, "just text"), client)
      << "a template without variables resolves none";
  EXPECT_EQ(Hash(HashOn::kVars, "mqtt_client_id"), client) << "a stream variable: nil in HTTP";
  EXPECT_EQ(HashKey().Hash(vars_, &scratch_), client) << "the default: vars, remote_addr";
}

TEST_F(HashKeyTest, AnEmptyValueIsHashedNotReplaced) {
  // APISIX falls back only on nil: "" is a key like any other.
  vars_.values = {{"remote_addr", "10.9.9.9"}, {"http:x-user", ""}};
  EXPECT_EQ(Hash(HashOn::kHeader, "X-User"), Crc32(""));
}

TEST_F(HashKeyTest, ParseHashOn) {
  EXPECT_EQ(ParseHashOn("vars"), HashOn::kVars);
  EXPECT_EQ(ParseHashOn("header"), HashOn::kHeader);
  EXPECT_EQ(ParseHashOn("cookie"), HashOn::kCookie);
  EXPECT_EQ(ParseHashOn("consumer"), HashOn::kConsumer);
  EXPECT_EQ(ParseHashOn("vars_combinations"), HashOn::kVarsCombinations);
  EXPECT_EQ(ParseHashOn("ip"), std::nullopt);
}

}  // namespace
}  // namespace turnpike::upstream
