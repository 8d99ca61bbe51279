#include "router/route_table.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace turnpike::router {
namespace {

using base::Method;

constexpr uint32_t kNoMatch = RouteTable::kNoMatch;

RouteKey Key(uint32_t payload, std::vector<std::string> uris, std::vector<std::string> hosts = {},
             int priority = 0, base::MethodMask methods = base::kAnyMethod) {
  RouteKey k;
  k.uris = std::move(uris);
  k.hosts = std::move(hosts);
  k.priority = priority;
  k.methods = methods;
  k.payload = payload;
  return k;
}

base::MethodMask Methods(std::initializer_list<Method> ms) {
  base::MethodMask mask = 0;
  for (Method m : ms) mask |= base::MaskOf(m);
  return mask;
}

uint32_t Get(const RouteTableConstSharedPtr& t, std::string_view path,
             std::string_view host = "example.com") {
  return t->Match(Method::kGet, host, path);
}

TEST(RouteTableTest, EmptyTableMatchesNothing) {
  auto t = RouteTable::Build({});
  EXPECT_EQ(t->size(), 0u);
  EXPECT_EQ(Get(t, "/"), kNoMatch);
  EXPECT_EQ(Get(t, ""), kNoMatch);
  EXPECT_EQ(t->Match(Method::kOther, "", ""), kNoMatch);
}

TEST(RouteTableTest, ExactPathIsExact) {
  auto t = RouteTable::Build({Key(1, {"/hello"})});
  EXPECT_EQ(t->size(), 1u);
  EXPECT_EQ(Get(t, "/hello"), 1u);
  EXPECT_EQ(Get(t, "/hello/"), kNoMatch);
  EXPECT_EQ(Get(t, "/hell"), kNoMatch);
  EXPECT_EQ(Get(t, "/hellox"), kNoMatch);
  EXPECT_EQ(Get(t, "/"), kNoMatch);
}

TEST(RouteTableTest, SlashStarPrefixNeedsTheSlash) {
  auto t = RouteTable::Build({Key(1, {"/foo/*"})});
  EXPECT_EQ(Get(t, "/foo/"), 1u);
  EXPECT_EQ(Get(t, "/foo/x"), 1u);
  EXPECT_EQ(Get(t, "/foo/x/y"), 1u);
  EXPECT_EQ(Get(t, "/foo"), kNoMatch);
  EXPECT_EQ(Get(t, "/foobar"), kNoMatch);
}

TEST(RouteTableTest, BareStarSuffixIsAPlainPrefix) {
  auto t = RouteTable::Build({Key(1, {"/foo*"})});
  EXPECT_EQ(Get(t, "/foo"), 1u);
  EXPECT_EQ(Get(t, "/foobar"), 1u);
  EXPECT_EQ(Get(t, "/foo/x"), 1u);
  EXPECT_EQ(Get(t, "/fo"), kNoMatch);
}

TEST(RouteTableTest, StarAloneMatchesEverything) {
  auto t = RouteTable::Build({Key(1, {"*"})});
  EXPECT_EQ(Get(t, "/"), 1u);
  EXPECT_EQ(Get(t, "/a/b/c"), 1u);
  EXPECT_EQ(Get(t, ""), 1u);
}

TEST(RouteTableTest, ColonIsLiteral) {
  auto t = RouteTable::Build({Key(1, {"/file:list"}), Key(2, {"/user/:id"})});
  EXPECT_EQ(Get(t, "/file:list"), 1u);
  EXPECT_EQ(Get(t, "/user/:id"), 2u);
  EXPECT_EQ(Get(t, "/user/42"), kNoMatch);
}

TEST(RouteTableTest, ExactBeatsPrefixRegardlessOfPriority) {
  auto t = RouteTable::Build({Key(1, {"/a/*"}, {}, 100), Key(2, {"/a/b"}, {}, -100)});
  EXPECT_EQ(Get(t, "/a/b"), 2u);
  EXPECT_EQ(Get(t, "/a/c"), 1u);
}

TEST(RouteTableTest, LongerPrefixBeatsShorter) {
  auto t = RouteTable::Build(
      {Key(1, {"/blog/foo/*"}, {}, 10), Key(2, {"/blog/foo/a/*"}), Key(3, {"/*"}, {}, 99)});
  EXPECT_EQ(Get(t, "/blog/foo/a/b"), 2u);
  EXPECT_EQ(Get(t, "/blog/foo/b"), 1u);
  EXPECT_EQ(Get(t, "/blog/foo/a"), 1u);  // "/blog/foo/a/" is not a prefix of it
  EXPECT_EQ(Get(t, "/blog"), 3u);
}

TEST(RouteTableTest, PriorityOrdersWithinExactBucket) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {}, 1), Key(2, {"/x"}, {}, 5), Key(3, {"/x"}, {}, 3)});
  EXPECT_EQ(Get(t, "/x"), 2u);
}

TEST(RouteTableTest, PriorityOrdersWithinPrefixBucket) {
  auto t = RouteTable::Build({Key(1, {"/x/*"}, {}, 1), Key(2, {"/x/*"}, {}, 5)});
  EXPECT_EQ(Get(t, "/x/y"), 2u);
}

TEST(RouteTableTest, ConfigOrderBreaksTies) {
  auto t = RouteTable::Build({Key(7, {"/x"}), Key(3, {"/x"}), Key(9, {"/p/*"}), Key(4, {"/p/*"})});
  EXPECT_EQ(Get(t, "/x"), 7u);
  EXPECT_EQ(Get(t, "/p/q"), 9u);
}

TEST(RouteTableTest, LongerOriginalPathFirstWithinPrefixBucket) {
  // Both live in the bucket of prefix "/a/"; the longer configured path is tried first, but
  // priority still comes before length.
  auto t = RouteTable::Build({Key(1, {"/a/*"}), Key(2, {"/a/*/b"})});
  EXPECT_EQ(Get(t, "/a/x/b"), 2u);
  EXPECT_EQ(Get(t, "/a/x/c"), 1u);
  auto p = RouteTable::Build({Key(1, {"/a/*"}, {}, 1), Key(2, {"/a/*/b"})});
  EXPECT_EQ(Get(p, "/a/x/b"), 1u);
}

TEST(RouteTableTest, GlobInTheMiddle) {
  auto t = RouteTable::Build({Key(1, {"/a/*/b"}), Key(2, {"/v*/users/*/orders"})});
  EXPECT_EQ(Get(t, "/a/x/b"), 1u);
  EXPECT_EQ(Get(t, "/a/x/y/b"), 1u);  // '*' spans '/'
  EXPECT_EQ(Get(t, "/a//b"), 1u);
  EXPECT_EQ(Get(t, "/a/x/b/c"), kNoMatch);
  EXPECT_EQ(Get(t, "/a/b"), kNoMatch);
  EXPECT_EQ(Get(t, "/b/x/b"), kNoMatch);
  EXPECT_EQ(Get(t, "/v1/users/42/orders"), 2u);
  EXPECT_EQ(Get(t, "/v1/users/42/orders/1"), kNoMatch);
}

TEST(RouteTableTest, FailedGlobFallsThroughToShorterPrefix) {
  auto t = RouteTable::Build({Key(1, {"/a/*/b"}), Key(2, {"/*"})});
  EXPECT_EQ(Get(t, "/a/x/c"), 2u);
}

TEST(RouteTableTest, UrisListInsertsEveryUri) {
  auto t = RouteTable::Build({Key(1, {"/one", "/two/*", "/three"}), Key(2, {"/two/x"})});
  EXPECT_EQ(Get(t, "/one"), 1u);
  EXPECT_EQ(Get(t, "/two/y"), 1u);
  EXPECT_EQ(Get(t, "/three"), 1u);
  EXPECT_EQ(Get(t, "/two/x"), 2u);
  EXPECT_EQ(Get(t, "/four"), kNoMatch);
  EXPECT_EQ(t->size(), 2u);
}

TEST(RouteTableTest, MethodsFilterFallsThroughInsideABucket) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {}, 5, Methods({Method::kPost})),
                              Key(2, {"/x"}, {}, 0, Methods({Method::kGet, Method::kHead}))});
  EXPECT_EQ(t->Match(Method::kPost, "h", "/x"), 1u);
  EXPECT_EQ(t->Match(Method::kGet, "h", "/x"), 2u);
  EXPECT_EQ(t->Match(Method::kHead, "h", "/x"), 2u);
  EXPECT_EQ(t->Match(Method::kPut, "h", "/x"), kNoMatch);
}

TEST(RouteTableTest, MethodsFilterFallsThroughToTheNextBucket) {
  auto t = RouteTable::Build({Key(1, {"/a/b"}, {}, 0, Methods({Method::kPost})),
                              Key(2, {"/a/*"}, {}, 0, Methods({Method::kPut})), Key(3, {"/*"})});
  EXPECT_EQ(t->Match(Method::kPost, "h", "/a/b"), 1u);
  EXPECT_EQ(t->Match(Method::kPut, "h", "/a/b"), 2u);
  EXPECT_EQ(t->Match(Method::kGet, "h", "/a/b"), 3u);
}

TEST(RouteTableTest, MethodsFilterFallsThroughToTheNextHost) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"a.foo.com"}, 0, Methods({Method::kPost})),
                              Key(2, {"/x"}, {"*.foo.com"}, 0, Methods({Method::kPut})),
                              Key(3, {"/x"})});
  EXPECT_EQ(t->Match(Method::kPost, "a.foo.com", "/x"), 1u);
  EXPECT_EQ(t->Match(Method::kPut, "a.foo.com", "/x"), 2u);
  EXPECT_EQ(t->Match(Method::kGet, "a.foo.com", "/x"), 3u);
}

TEST(RouteTableTest, UnknownMethodMatchesOnlyRoutesWithoutMethods) {
  auto t =
      RouteTable::Build({Key(1, {"/x"}, {}, 9,
                             Methods({Method::kGet, Method::kPost, Method::kPut, Method::kDelete,
                                      Method::kPatch, Method::kHead, Method::kOptions,
                                      Method::kConnect, Method::kTrace, Method::kPurge})),
                         Key(2, {"/x"})});
  EXPECT_EQ(t->Match(Method::kOther, "h", "/x"), 2u);
  EXPECT_EQ(t->Match(Method::kTrace, "h", "/x"), 1u);
}

TEST(RouteTableTest, HostBoundRouteBeatsHostLessEvenWithLowerPriority) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {}, 100), Key(2, {"/*"}, {"a.com"}, -5)});
  EXPECT_EQ(Get(t, "/x", "a.com"), 2u);  // even a prefix route, since the host comes first
  EXPECT_EQ(Get(t, "/x", "b.com"), 1u);
}

TEST(RouteTableTest, HostBoundMissFallsBackToHostLess) {
  auto t = RouteTable::Build({Key(1, {"/only"}, {"a.com"}), Key(2, {"/other"})});
  EXPECT_EQ(Get(t, "/other", "a.com"), 2u);
  EXPECT_EQ(Get(t, "/only", "a.com"), 1u);
  EXPECT_EQ(Get(t, "/only", "b.com"), kNoMatch);
}

TEST(RouteTableTest, ExactHostBeatsWildcard) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"*.foo.com"}, 50), Key(2, {"/x"}, {"a.foo.com"})});
  EXPECT_EQ(Get(t, "/x", "a.foo.com"), 2u);
  EXPECT_EQ(Get(t, "/x", "b.foo.com"), 1u);
}

TEST(RouteTableTest, LongerWildcardBeatsShorterAndStarIsShortest) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"*"}, 9), Key(2, {"/x"}, {"*.com"}, 5),
                              Key(3, {"/x"}, {"*.foo.com"}), Key(4, {"/x"}, {"*.b.foo.com"})});
  EXPECT_EQ(Get(t, "/x", "a.b.foo.com"), 4u);
  EXPECT_EQ(Get(t, "/x", "a.c.foo.com"), 3u);
  EXPECT_EQ(Get(t, "/x", "bar.com"), 2u);
  EXPECT_EQ(Get(t, "/x", "localhost"), 1u);
  EXPECT_EQ(Get(t, "/x", ""), 1u);
}

TEST(RouteTableTest, WildcardSpecificityAppliesPerHostTableBeforePaths) {
  // The more specific host wins even when only a shorter path prefix matches there.
  auto t = RouteTable::Build({Key(1, {"/a/b/c"}, {"*.com"}), Key(2, {"/*"}, {"*.foo.com"})});
  EXPECT_EQ(Get(t, "/a/b/c", "x.foo.com"), 2u);
  // And a miss in the specific table falls through to the shorter wildcard.
  auto u = RouteTable::Build({Key(1, {"/a/b/c"}, {"*.com"}), Key(2, {"/z"}, {"*.foo.com"})});
  EXPECT_EQ(Get(u, "/a/b/c", "x.foo.com"), 1u);
}

TEST(RouteTableTest, WildcardDoesNotMatchTheApex) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"*.foo.com"})});
  EXPECT_EQ(Get(t, "/x", "a.foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "a.b.foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", ".foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "foo.com"), kNoMatch);
  EXPECT_EQ(Get(t, "/x", "afoo.com"), kNoMatch);
  EXPECT_EQ(Get(t, "/x", "foo.com.evil"), kNoMatch);
}

TEST(RouteTableTest, ApexAndWildcardTogether) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"*.foo.com"}), Key(2, {"/x"}, {"foo.com"})});
  EXPECT_EQ(Get(t, "/x", "foo.com"), 2u);
  EXPECT_EQ(Get(t, "/x", "www.foo.com"), 1u);
}

TEST(RouteTableTest, HostsListAndCaseFolding) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"A.com", "*.B.com"})});
  EXPECT_EQ(Get(t, "/x", "a.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "www.b.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "c.com"), kNoMatch);
}

TEST(RouteTableTest, ExactHostDoesNotMatchSubdomains) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"foo.com"})});
  EXPECT_EQ(Get(t, "/x", "foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "a.foo.com"), kNoMatch);
  EXPECT_EQ(Get(t, "/x", "oo.com"), kNoMatch);
}

TEST(RouteTableTest, SharedTrieNodesKeepBucketsApart) {
  // Exact and prefix on the same string, and keys that are prefixes of one another.
  auto t = RouteTable::Build(
      {Key(1, {"/a"}), Key(2, {"/a*"}), Key(3, {"/ab"}), Key(4, {"/abc*"}), Key(5, {"/"})});
  EXPECT_EQ(Get(t, "/a"), 1u);
  EXPECT_EQ(Get(t, "/ab"), 3u);
  EXPECT_EQ(Get(t, "/abc"), 4u);
  EXPECT_EQ(Get(t, "/abd"), 2u);
  EXPECT_EQ(Get(t, "/abcdef"), 4u);
  EXPECT_EQ(Get(t, "/"), 5u);
  EXPECT_EQ(Get(t, "/b"), kNoMatch);
}

}  // namespace
}  // namespace turnpike::router
