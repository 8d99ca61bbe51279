// RouteTable modes (kHostUri / kUri / kUriWithParameter), path parameters, RouteFilter and
// MatchInfo.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "router/route_table.h"

namespace turnpike::router {
namespace {

using base::Method;

constexpr uint32_t kNoMatch = RouteTable::kNoMatch;

RouteKey Key(uint32_t payload, std::vector<std::string> uris, std::vector<std::string> hosts = {},
             int priority = 0, bool has_filter = false) {
  RouteKey k;
  k.uris = std::move(uris);
  k.hosts = std::move(hosts);
  k.priority = priority;
  k.payload = payload;
  k.has_filter = has_filter;
  return k;
}

uint32_t Get(const RouteTableConstSharedPtr& t, std::string_view path,
             std::string_view host = "example.com") {
  return t->Match(Method::kGet, host, path);
}

// Rejects the payloads in `rejected`; remembers what it was asked.
class RejectSet final : public RouteFilter {
 public:
  explicit RejectSet(std::set<uint32_t> rejected) : rejected_(std::move(rejected)) {}
  bool Accept(uint32_t payload, const PathParams& params) override {
    asked.push_back(payload);
    last_param_count = params.count;
    return rejected_.count(payload) == 0;
  }
  std::vector<uint32_t> asked;
  int last_param_count = -1;

 private:
  std::set<uint32_t> rejected_;
};

// Accepts only when the parameter `name` equals `value`.
class ParamEquals final : public RouteFilter {
 public:
  ParamEquals(std::string name, std::string value)
      : name_(std::move(name)), value_(std::move(value)) {}
  bool Accept(uint32_t, const PathParams& params) override {
    std::string_view v;
    return params.Find(name_, &v) && v == value_;
  }

 private:
  std::string name_;
  std::string value_;
};

// --- Modes ----------------------------------------------------------------------------------

TEST(RouteModesTest, DefaultModeIsHostUri) {
  auto t = RouteTable::Build({Key(1, {"/x"})});
  EXPECT_EQ(t->mode(), Mode::kHostUri);
}

TEST(RouteModesTest, HostBoundBeatsHostLessOnlyInHostUri) {
  // A higher-priority host-less exact route and a host-bound prefix route.
  const std::vector<RouteKey> keys = {Key(1, {"/x"}, {}, 100), Key(2, {"/*"}, {"a.com"}, -5)};
  auto host_uri = RouteTable::Build(keys, Mode::kHostUri);
  auto uri = RouteTable::Build(keys, Mode::kUri);
  EXPECT_EQ(Get(host_uri, "/x", "a.com"), 2u);
  EXPECT_EQ(Get(uri, "/x", "a.com"), 1u);  // exact bucket first, whatever the host
  EXPECT_EQ(Get(uri, "/y", "a.com"), 2u);
  EXPECT_EQ(Get(uri, "/y", "b.com"), kNoMatch);  // hosts still filter
  EXPECT_EQ(Get(uri, "/x", "b.com"), 1u);
}

TEST(RouteModesTest, UriModeOrdersByPriorityWithinABucketWhateverTheHosts) {
  const std::vector<RouteKey> keys = {Key(1, {"/x"}, {"a.com"}, 1), Key(2, {"/x"}, {}, 5),
                                      Key(3, {"/x"}, {"*.com"}, 3)};
  auto host_uri = RouteTable::Build(keys, Mode::kHostUri);
  auto uri = RouteTable::Build(keys, Mode::kUri);
  EXPECT_EQ(Get(host_uri, "/x", "a.com"), 1u);  // exact host table first
  EXPECT_EQ(Get(host_uri, "/x", "b.com"), 3u);  // wildcard table before host-less
  EXPECT_EQ(Get(uri, "/x", "a.com"), 2u);       // priority decides
  EXPECT_EQ(Get(uri, "/x", "b.com"), 2u);
}

TEST(RouteModesTest, UriModeConfigOrderBreaksTiesAcrossHostAndHostLess) {
  auto t = RouteTable::Build({Key(1, {"/p/*"}, {"a.com"}), Key(2, {"/p/*"})}, Mode::kUri);
  EXPECT_EQ(Get(t, "/p/q", "a.com"), 1u);
  EXPECT_EQ(Get(t, "/p/q", "b.com"), 2u);
  auto u = RouteTable::Build({Key(2, {"/p/*"}), Key(1, {"/p/*"}, {"a.com"})}, Mode::kUri);
  EXPECT_EQ(Get(u, "/p/q", "a.com"), 2u);
}

TEST(RouteModesTest, UriModeLongerPrefixBeatsHostSpecificity) {
  auto t =
      RouteTable::Build({Key(1, {"/a/*"}, {"exact.com"}), Key(2, {"/a/b/*"}, {"*"})}, Mode::kUri);
  EXPECT_EQ(Get(t, "/a/b/c", "exact.com"), 2u);
  auto h = RouteTable::Build({Key(1, {"/a/*"}, {"exact.com"}), Key(2, {"/a/b/*"}, {"*"})});
  EXPECT_EQ(Get(h, "/a/b/c", "exact.com"), 1u);
}

TEST(RouteModesTest, UriModeHostPatterns) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"*.foo.com", "Bar.com"}), Key(2, {"/x"}, {"*"})},
                             Mode::kUri);
  EXPECT_EQ(Get(t, "/x", "a.foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "a.b.foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", ".foo.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "bar.com"), 1u);
  EXPECT_EQ(Get(t, "/x", "foo.com"), 2u);  // the wildcard does not match the apex
  EXPECT_EQ(Get(t, "/x", ""), 2u);
}

TEST(RouteModesTest, ColonIsLiteralOutsideTheParamMode) {
  for (Mode mode : {Mode::kHostUri, Mode::kUri}) {
    auto t = RouteTable::Build({Key(1, {"/file:list"}), Key(2, {"/user/:id"})}, mode);
    EXPECT_EQ(Get(t, "/file:list"), 1u);
    EXPECT_EQ(Get(t, "/user/:id"), 2u);
    EXPECT_EQ(Get(t, "/user/42"), kNoMatch);
  }
}

TEST(RouteModesTest, UriModesKeepGlobAndPrefixRules) {
  for (Mode mode : {Mode::kUri, Mode::kUriWithParameter}) {
    auto t = RouteTable::Build(
        {Key(1, {"/foo/*"}), Key(2, {"/bar*"}), Key(3, {"/a/*/b"}), Key(4, {"/exact"})}, mode);
    EXPECT_EQ(Get(t, "/foo/"), 1u);
    EXPECT_EQ(Get(t, "/foo/x/y"), 1u);
    EXPECT_EQ(Get(t, "/foo"), kNoMatch);
    EXPECT_EQ(Get(t, "/bar"), 2u);
    EXPECT_EQ(Get(t, "/barista"), 2u);
    EXPECT_EQ(Get(t, "/a/x/y/b"), 3u);
    EXPECT_EQ(Get(t, "/a/x/c"), kNoMatch);
    EXPECT_EQ(Get(t, "/exact"), 4u);
    EXPECT_EQ(Get(t, "/exact/"), kNoMatch);
  }
}

// --- Path parameters ------------------------------------------------------------------------

struct ParamResult {
  uint32_t payload;
  PathParams params;
  MatchInfo info;
};

ParamResult MatchParams(const RouteTableConstSharedPtr& t, std::string_view path,
                        RouteFilter* filter = nullptr, std::string_view host = "example.com") {
  ParamResult r{};
  r.params.count = 99;  // must be overwritten
  r.payload = t->Match(MatchRequest{Method::kGet, host, path}, filter, &r.params, &r.info);
  return r;
}

TEST(RouteParamsTest, SegmentParameter) {
  auto t = RouteTable::Build({Key(1, {"/user/:id"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/user/42");
  ASSERT_EQ(r.payload, 1u);
  ASSERT_EQ(r.params.count, 1);
  EXPECT_EQ(r.params.names[0], "id");
  EXPECT_EQ(r.params.values[0], "42");
  EXPECT_EQ(r.info.matched_uri, "/user/:id");
  EXPECT_EQ(r.info.matched_host, "");

  EXPECT_EQ(MatchParams(t, "/user/").payload, kNoMatch);  // the segment must not be empty
  EXPECT_EQ(MatchParams(t, "/user").payload, kNoMatch);
  EXPECT_EQ(MatchParams(t, "/user/42/").payload, kNoMatch);  // one segment only
  EXPECT_EQ(MatchParams(t, "/user/42/x").payload, kNoMatch);
  const ParamResult miss = MatchParams(t, "/nothing");
  EXPECT_EQ(miss.params.count, 0);
  EXPECT_EQ(miss.info.matched_uri, "");
}

TEST(RouteParamsTest, ValuesViewTheRequestPath) {
  auto t = RouteTable::Build({Key(1, {"/user/:id"})}, Mode::kUriWithParameter);
  const std::string path = "/user/abc";
  ParamResult r = MatchParams(t, path);
  ASSERT_EQ(r.params.count, 1);
  EXPECT_EQ(r.params.values[0].data(), path.data() + 6);
}

TEST(RouteParamsTest, ParameterThenRest) {
  auto t = RouteTable::Build({Key(1, {"/user/:id/posts/*rest"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/user/7/posts/2024/05/hello");
  ASSERT_EQ(r.payload, 1u);
  ASSERT_EQ(r.params.count, 2);
  EXPECT_EQ(r.params.names[0], "id");
  EXPECT_EQ(r.params.values[0], "7");
  EXPECT_EQ(r.params.names[1], "rest");
  EXPECT_EQ(r.params.values[1], "2024/05/hello");

  r = MatchParams(t, "/user/7/posts/");
  ASSERT_EQ(r.payload, 1u);
  ASSERT_EQ(r.params.count, 2);
  EXPECT_EQ(r.params.values[1], "");  // a rest may be empty
  EXPECT_EQ(MatchParams(t, "/user/7/posts").payload, kNoMatch);
  EXPECT_EQ(MatchParams(t, "/user/7/comments/1").payload, kNoMatch);
}

TEST(RouteParamsTest, TrailingStarIsAPlainPrefix) {
  auto t = RouteTable::Build({Key(1, {"/files/*"}), Key(2, {"/img*"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/files/a/b.txt");
  EXPECT_EQ(r.payload, 1u);
  EXPECT_EQ(r.params.count, 0);
  EXPECT_EQ(r.info.matched_uri, "/files/*");
  EXPECT_EQ(MatchParams(t, "/files/").payload, 1u);
  EXPECT_EQ(MatchParams(t, "/files").payload, kNoMatch);
  EXPECT_EQ(MatchParams(t, "/imgs/x").payload, 2u);
}

TEST(RouteParamsTest, NamedRestCapturesTheRest) {
  auto t = RouteTable::Build({Key(1, {"/files/*path"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/files/a/b.txt");
  ASSERT_EQ(r.payload, 1u);
  ASSERT_EQ(r.params.count, 1);
  EXPECT_EQ(r.params.names[0], "path");
  EXPECT_EQ(r.params.values[0], "a/b.txt");
}

TEST(RouteParamsTest, RestInTheMiddleIsGreedy) {
  auto t = RouteTable::Build({Key(1, {"/a/*x/b/:id"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/a/1/b/2/b/3");
  ASSERT_EQ(r.payload, 1u);
  ASSERT_EQ(r.params.count, 2);
  EXPECT_EQ(r.params.values[0], "1/b/2");  // (.*) takes as much as it can
  EXPECT_EQ(r.params.values[1], "3");
  EXPECT_EQ(MatchParams(t, "/a/1/b/2/b/").payload, kNoMatch);
}

TEST(RouteParamsTest, SeveralParameters) {
  auto t = RouteTable::Build({Key(1, {"/:a/:b/:c"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/x/y/z");
  ASSERT_EQ(r.params.count, 3);
  EXPECT_EQ(r.params.values[0], "x");
  EXPECT_EQ(r.params.values[1], "y");
  EXPECT_EQ(r.params.values[2], "z");
  EXPECT_EQ(r.info.matched_uri, "/:a/:b/:c");
}

TEST(RouteParamsTest, MoreThanEightParametersMatchButKeepEight) {
  auto t = RouteTable::Build({Key(1, {"/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/1/2/3/4/5/6/7/8/9/10");
  ASSERT_EQ(r.payload, 1u);
  ASSERT_EQ(r.params.count, PathParams::kMax);
  EXPECT_EQ(r.params.names[7], "h");
  EXPECT_EQ(r.params.values[7], "8");
}

TEST(RouteParamsTest, RepeatedNameFindsTheLastValue) {
  auto t = RouteTable::Build({Key(1, {"/:id/x/:id"})}, Mode::kUriWithParameter);
  ParamResult r = MatchParams(t, "/a/x/b");
  ASSERT_EQ(r.params.count, 2);
  std::string_view v;
  ASSERT_TRUE(r.params.Find("id", &v));
  EXPECT_EQ(v, "b");
  EXPECT_FALSE(r.params.Find("nope", &v));
}

TEST(RouteParamsTest, ColonInsideASegmentIsLiteral) {
  auto t =
      RouteTable::Build({Key(1, {"/file:list"}), Key(2, {"/v1/a:b/:id"})}, Mode::kUriWithParameter);
  EXPECT_EQ(MatchParams(t, "/file:list").payload, 1u);
  EXPECT_EQ(MatchParams(t, "/filex").payload, kNoMatch);
  EXPECT_EQ(MatchParams(t, "/file:listx").payload, kNoMatch);
  ParamResult r = MatchParams(t, "/v1/a:b/9");
  ASSERT_EQ(r.payload, 2u);
  EXPECT_EQ(r.params.values[0], "9");
}

TEST(RouteParamsTest, ParamRoutesArePrefixBucketsOnTheLiteralPart) {
  // Exact beats param; a longer literal prefix beats a shorter one; priority orders a bucket.
  auto t = RouteTable::Build({Key(1, {"/user/:id"}), Key(2, {"/user/me"}), Key(3, {"/user/*"}),
                              Key(4, {"/:any/:id"}, {}, 50)},
                             Mode::kUriWithParameter);
  EXPECT_EQ(MatchParams(t, "/user/me").payload, 2u);
  EXPECT_EQ(MatchParams(t, "/user/42").payload, 1u);  // "/user/" bucket: longer uri first
  EXPECT_EQ(MatchParams(t, "/user/42/x").payload, 3u);
  EXPECT_EQ(MatchParams(t, "/team/42").payload, 4u);
}

TEST(RouteParamsTest, FailedParamCheckFallsThroughToShorterPrefix) {
  auto t =
      RouteTable::Build({Key(1, {"/user/:id/profile"}), Key(2, {"/*"})}, Mode::kUriWithParameter);
  EXPECT_EQ(MatchParams(t, "/user/1/profile").payload, 1u);
  ParamResult r = MatchParams(t, "/user/1/other");
  EXPECT_EQ(r.payload, 2u);
  EXPECT_EQ(r.params.count, 0);  // the failed candidate's partial captures are gone
}

TEST(RouteParamsTest, ParamsWithHostsMethodsAndPriority) {
  std::vector<RouteKey> keys = {Key(1, {"/u/:id"}, {"a.com"}, 0), Key(2, {"/u/:name"}, {}, -1)};
  keys[0].methods = base::MaskOf(Method::kPost);
  auto t = RouteTable::Build(keys, Mode::kUriWithParameter);
  PathParams params;
  MatchInfo info;
  EXPECT_EQ(t->Match({Method::kPost, "a.com", "/u/5"}, nullptr, &params, &info), 1u);
  EXPECT_EQ(params.names[0], "id");
  EXPECT_EQ(info.matched_host, "a.com");
  EXPECT_EQ(t->Match({Method::kGet, "a.com", "/u/5"}, nullptr, &params, &info), 2u);
  EXPECT_EQ(params.names[0], "name");
  EXPECT_EQ(info.matched_host, "");
  EXPECT_EQ(t->Match({Method::kPost, "b.com", "/u/5"}, nullptr, &params, &info), 2u);
}

TEST(RouteParamsTest, TooManyRestsNeverMatch) {
  auto t = RouteTable::Build({Key(1, {"/*a/*b/*c/*d/*e/*f/*g/*h/*i"}), Key(2, {"/*"})},
                             Mode::kUriWithParameter);
  EXPECT_EQ(MatchParams(t, "/1/2/3/4/5/6/7/8/9").payload, 2u);
  auto u = RouteTable::Build({Key(1, {"/*a/*b/*c/*d/*e/*f/*g/*h"})}, Mode::kUriWithParameter);
  EXPECT_EQ(MatchParams(u, "/1/2/3/4/5/6/7/8").payload, 1u);
}

// --- RouteFilter ----------------------------------------------------------------------------

TEST(RouteFilterTest, RejectedCandidateFallsThroughToTheNextInTheBucket) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {}, 5, true), Key(2, {"/x"}, {}, 0, true)});
  RejectSet reject({1});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/x"}, &reject, nullptr, nullptr), 2u);
  EXPECT_EQ(reject.asked, (std::vector<uint32_t>{1, 2}));
  RejectSet both({1, 2});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/x"}, &both, nullptr, nullptr), kNoMatch);
}

TEST(RouteFilterTest, OnlyRoutesWithHasFilterAreAsked) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {}, 5, false), Key(2, {"/x"}, {}, 0, true)});
  RejectSet reject({1, 2});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/x"}, &reject, nullptr, nullptr), 1u);
  EXPECT_TRUE(reject.asked.empty());
}

TEST(RouteFilterTest, NullFilterAcceptsEverything) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {}, 0, true)});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/x"}, nullptr, nullptr, nullptr), 1u);
  EXPECT_EQ(t->Match(Method::kGet, "h", "/x"), 1u);
}

TEST(RouteFilterTest, AskedOnlyAfterMethodsAndHostsPass) {
  std::vector<RouteKey> keys = {Key(1, {"/x"}, {"a.com"}, 9, true), Key(2, {"/x"}, {}, 5, true),
                                Key(3, {"/x"}, {}, 0, true)};
  keys[1].methods = base::MaskOf(Method::kPost);
  auto t = RouteTable::Build(keys, Mode::kUri);
  RejectSet none({});
  EXPECT_EQ(t->Match({Method::kGet, "b.com", "/x"}, &none, nullptr, nullptr), 3u);
  EXPECT_EQ(none.asked, (std::vector<uint32_t>{3}));
}

TEST(RouteFilterTest, RejectedFallsThroughToShorterPrefix) {
  auto t = RouteTable::Build(
      {Key(1, {"/a/b"}, {}, 0, true), Key(2, {"/a/*"}, {}, 0, true), Key(3, {"/*"}, {}, 0, true)});
  RejectSet reject({1});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/a/b"}, &reject, nullptr, nullptr), 2u);
  RejectSet reject2({1, 2});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/a/b"}, &reject2, nullptr, nullptr), 3u);
}

TEST(RouteFilterTest, RejectedFallsThroughToHostLessRoutes) {
  auto t = RouteTable::Build({Key(1, {"/*"}, {"a.com"}, 0, true),
                              Key(2, {"/*"}, {"*.com"}, 0, true), Key(3, {"/x"}, {}, 0, false)});
  RejectSet reject({1});
  MatchInfo info;
  EXPECT_EQ(t->Match({Method::kGet, "a.com", "/x"}, &reject, nullptr, &info), 2u);
  EXPECT_EQ(info.matched_host, "*.com");
  RejectSet reject2({1, 2});
  EXPECT_EQ(t->Match({Method::kGet, "a.com", "/x"}, &reject2, nullptr, &info), 3u);
  EXPECT_EQ(info.matched_host, "");
  EXPECT_EQ(info.matched_uri, "/x");
}

TEST(RouteFilterTest, FilterSeesTheCandidatesParameters) {
  auto t = RouteTable::Build({Key(1, {"/user/:id"}, {}, 5, true),
                              Key(2, {"/user/:name"}, {}, 0, true), Key(3, {"/user/*"})},
                             Mode::kUriWithParameter);
  ParamEquals only_name("name", "bob");
  ParamResult r = MatchParams(t, "/user/bob", &only_name);
  ASSERT_EQ(r.payload, 2u);
  ASSERT_EQ(r.params.count, 1);
  EXPECT_EQ(r.params.names[0], "name");
  r = MatchParams(t, "/user/alice", &only_name);
  EXPECT_EQ(r.payload, 3u);
  EXPECT_EQ(r.params.count, 0);
  EXPECT_EQ(r.info.matched_uri, "/user/*");
}

TEST(RouteFilterTest, FilterSeesParametersEvenWhenTheCallerDoesNotAskForThem) {
  auto t = RouteTable::Build({Key(1, {"/user/:id"}, {}, 0, true)}, Mode::kUriWithParameter);
  RejectSet none({});
  EXPECT_EQ(t->Match({Method::kGet, "h", "/user/1"}, &none, nullptr, nullptr), 1u);
  EXPECT_EQ(none.last_param_count, 1);
}

// --- MatchInfo ------------------------------------------------------------------------------

TEST(MatchInfoTest, ReportsTheMatchedPatterns) {
  auto t = RouteTable::Build({Key(1, {"/a", "/foo*"}, {"x.org", "*.COM"}), Key(2, {"/bar/*"})});
  MatchInfo info;
  EXPECT_EQ(t->Match({Method::kGet, "www.com", "/foobar"}, nullptr, nullptr, &info), 1u);
  EXPECT_EQ(info.matched_uri, "/foo*");
  EXPECT_EQ(info.matched_host, "*.com");  // lowercased
  EXPECT_EQ(t->Match({Method::kGet, "x.org", "/a"}, nullptr, nullptr, &info), 1u);
  EXPECT_EQ(info.matched_uri, "/a");
  EXPECT_EQ(info.matched_host, "x.org");
  EXPECT_EQ(t->Match({Method::kGet, "x.org", "/bar/1"}, nullptr, nullptr, &info), 2u);
  EXPECT_EQ(info.matched_uri, "/bar/*");
  EXPECT_EQ(info.matched_host, "");
  EXPECT_EQ(t->Match({Method::kGet, "x.org", "/none"}, nullptr, nullptr, &info), kNoMatch);
  EXPECT_EQ(info.matched_uri, "");
  EXPECT_EQ(info.matched_host, "");
}

TEST(MatchInfoTest, UriModeReportsTheFirstMatchingHostOfTheRoute) {
  auto t = RouteTable::Build({Key(1, {"/x"}, {"a.b.com", "*.com", "*"})}, Mode::kUri);
  MatchInfo info;
  EXPECT_EQ(t->Match({Method::kGet, "z.com", "/x"}, nullptr, nullptr, &info), 1u);
  EXPECT_EQ(info.matched_host, "*.com");
  EXPECT_EQ(t->Match({Method::kGet, "a.b.com", "/x"}, nullptr, nullptr, &info), 1u);
  EXPECT_EQ(info.matched_host, "a.b.com");
  EXPECT_EQ(t->Match({Method::kGet, "z.org", "/x"}, nullptr, nullptr, &info), 1u);
  EXPECT_EQ(info.matched_host, "*");
}

TEST(MatchInfoTest, ParamsAreEmptyOutsideTheParamMode) {
  auto t = RouteTable::Build({Key(1, {"/x/*"})}, Mode::kUri);
  PathParams params;
  params.count = 5;
  EXPECT_EQ(t->Match({Method::kGet, "h", "/x/1"}, nullptr, &params, nullptr), 1u);
  EXPECT_EQ(params.count, 0);
}

}  // namespace
}  // namespace turnpike::router
