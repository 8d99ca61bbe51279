#include "expr/ip_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace turnpike::expr {
namespace {

IpMatcher Must(std::vector<std::string> entries) {
  StatusOr<IpMatcher> m = IpMatcher::Build(entries);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : IpMatcher();
}

std::string ErrorOf(std::vector<std::string> entries) {
  StatusOr<IpMatcher> m = IpMatcher::Build(entries);
  return m.ok() ? "ok" : m.status().message();
}

TEST(IpMatcherTest, ParseV4IsStrict) {
  uint32_t v = 0;
  EXPECT_TRUE(IpMatcher::ParseV4("0.0.0.0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(IpMatcher::ParseV4("255.255.255.255", &v));
  EXPECT_EQ(v, 0xffffffffu);
  EXPECT_TRUE(IpMatcher::ParseV4("10.1.2.3", &v));
  EXPECT_EQ(v, 0x0a010203u);
  for (const char* bad :
       {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.04", " 1.2.3.4", "1.2.3.4 ",
        "1..2.3", "1.2.3.", "a.b.c.d", "1234.1.1.1", "-1.2.3.4", "1.2.3.4/8"}) {
    EXPECT_FALSE(IpMatcher::ParseV4(bad, &v)) << bad;
  }
}

TEST(IpMatcherTest, ParseV6) {
  IpMatcher::V6 v;
  EXPECT_TRUE(IpMatcher::ParseV6("::1", &v));
  EXPECT_EQ(v.hi, 0u);
  EXPECT_EQ(v.lo, 1u);
  EXPECT_TRUE(IpMatcher::ParseV6("[2001:db8::1]", &v));
  EXPECT_EQ(v.hi, 0x20010db800000000u);
  EXPECT_TRUE(IpMatcher::ParseV6("::ffff:10.0.0.1", &v));
  EXPECT_EQ(v.lo, 0x0000ffff0a000001u);
  for (const char* bad :
       {"", "[]", ":::", "1:2:3:4:5:6:7:8:9", "fe80::1%eth0", "[::1", "g::1", "10.0.0.1"}) {
    EXPECT_FALSE(IpMatcher::ParseV6(bad, &v)) << bad;
  }
}

TEST(IpMatcherTest, ErrorMessages) {
  EXPECT_EQ(ErrorOf({"10.0.0.0/33"}), "invalid IP or CIDR '10.0.0.0/33'");
  EXPECT_EQ(ErrorOf({"10.0.0.1", "::/129"}), "invalid IP or CIDR '::/129'");
  EXPECT_EQ(ErrorOf({"10.0.0.0/"}), "invalid IP or CIDR '10.0.0.0/'");
  EXPECT_EQ(ErrorOf({"10.0.0.0/-1"}), "invalid IP or CIDR '10.0.0.0/-1'");
  EXPECT_EQ(ErrorOf({"10.0.0.0/08"}), "invalid IP or CIDR '10.0.0.0/08'");
  EXPECT_EQ(ErrorOf({"10.0.0.0/8/8"}), "invalid IP or CIDR '10.0.0.0/8/8'");
  EXPECT_EQ(ErrorOf({"localhost"}), "invalid IP or CIDR 'localhost'");
  EXPECT_EQ(ErrorOf({""}), "invalid IP or CIDR ''");
  EXPECT_EQ(ErrorOf({"/8"}), "invalid IP or CIDR '/8'");
  EXPECT_EQ(ErrorOf({}), "ok");
}

TEST(IpMatcherTest, SingleAddresses) {
  IpMatcher m = Must({"127.0.0.1", "::1"});
  EXPECT_TRUE(m.Match("127.0.0.1"));
  EXPECT_FALSE(m.Match("127.0.0.2"));
  EXPECT_TRUE(m.Match("::1"));
  EXPECT_TRUE(m.Match("0:0:0:0:0:0:0:1"));
  EXPECT_TRUE(m.Match("[::1]"));
  EXPECT_FALSE(m.Match("::2"));
  EXPECT_FALSE(m.Match(""));
  EXPECT_FALSE(m.Match("garbage"));
  EXPECT_FALSE(m.Match("127.0.0.1:80"));
}

TEST(IpMatcherTest, CidrBoundaries) {
  IpMatcher m = Must({"192.168.3.0/24", "10.1.2.3/8"});  // host bits are ignored
  EXPECT_FALSE(m.Match("192.168.2.255"));
  EXPECT_TRUE(m.Match("192.168.3.0"));
  EXPECT_TRUE(m.Match("192.168.3.255"));
  EXPECT_FALSE(m.Match("192.168.4.0"));
  EXPECT_TRUE(m.Match("10.0.0.0"));
  EXPECT_TRUE(m.Match("10.255.255.255"));
  EXPECT_FALSE(m.Match("11.0.0.0"));
  EXPECT_FALSE(m.Match("9.255.255.255"));
}

TEST(IpMatcherTest, V6Cidrs) {
  IpMatcher m = Must({"2001:db8::/32", "fe80::/10", "::ffff:0:0/96", "2001:db8:0:0:8000::/65"});
  EXPECT_TRUE(m.Match("2001:db8::"));
  EXPECT_TRUE(m.Match("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"));
  EXPECT_FALSE(m.Match("2001:db9::"));
  EXPECT_TRUE(m.Match("febf::1"));
  EXPECT_FALSE(m.Match("fec0::1"));
  EXPECT_TRUE(m.Match("::ffff:1.2.3.4"));  // IPv4-mapped, matched as IPv6
  EXPECT_FALSE(m.Match("1.2.3.4"));        // and a plain IPv4 never matches IPv6 entries
}

TEST(IpMatcherTest, MatchAll) {
  IpMatcher v4 = Must({"0.0.0.0/0"});
  EXPECT_TRUE(v4.Match("0.0.0.0"));
  EXPECT_TRUE(v4.Match("255.255.255.255"));
  EXPECT_FALSE(v4.Match("::1"));
  IpMatcher v6 = Must({"::/0"});
  EXPECT_TRUE(v6.Match("::"));
  EXPECT_TRUE(v6.Match("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
  EXPECT_FALSE(v6.Match("1.2.3.4"));
}

TEST(IpMatcherTest, OverlappingAndAdjacentRangesMerge) {
  IpMatcher m = Must({"10.0.0.0/24", "10.0.1.0/24", "10.0.0.128/25", "10.0.0.7", "10.0.3.0/24",
                      "255.255.255.255", "255.255.255.254"});
  EXPECT_EQ(m.range_count(), 3u);  // 10.0.0.0-10.0.1.255, 10.0.3.0/24, the last two
  EXPECT_TRUE(m.Match("10.0.1.200"));
  EXPECT_FALSE(m.Match("10.0.2.0"));
  EXPECT_TRUE(m.Match("10.0.3.9"));
  EXPECT_TRUE(m.Match("255.255.255.255"));
  EXPECT_FALSE(m.Match("255.255.255.253"));
}

TEST(IpMatcherTest, EmptyMatchesNothing) {
  IpMatcher m = Must({});
  EXPECT_FALSE(m.Match("1.2.3.4"));
  EXPECT_FALSE(m.Match("::1"));
}

// Random CIDR sets against a direct check of every entry.
TEST(IpMatcherTest, AgreesWithLinearScan) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> entries;
    std::vector<std::pair<uint32_t, int>> nets;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      // A narrow address space so that ranges overlap and touch.
      const uint32_t addr = 0x0a000000u | (rng() & 0x3ff);
      const int len = 20 + static_cast<int>(rng() % 13);
      nets.push_back({addr, len});
      entries.push_back(std::to_string(addr >> 24) + "." + std::to_string((addr >> 16) & 255) +
                        "." + std::to_string((addr >> 8) & 255) + "." + std::to_string(addr & 255) +
                        "/" + std::to_string(len));
    }
    IpMatcher m = Must(entries);
    for (int q = 0; q < 300; ++q) {
      const uint32_t ip = 0x0a000000u | (rng() & 0xfff);
      bool want = false;
      for (const auto& [addr, len] : nets) {
        const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
        want = want || (ip & mask) == (addr & mask);
      }
      const std::string text = "10." + std::to_string((ip >> 16) & 255) + "." +
                               std::to_string((ip >> 8) & 255) + "." + std::to_string(ip & 255);
      ASSERT_EQ(m.Match(text), want) << text << " round " << round;
    }
  }
}

}  // namespace
}  // namespace turnpike::expr
