// How route `uris` and `hosts` strings are read (reference §2.2-2.3). Shared by RouteTable and
// the linear reference matcher; all functions are pure, and all but TokenizeParamUri are
// allocation-free.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "router/path_params.h"

namespace turnpike::router {

// --- Without path parameters (radixtree_host_uri, radixtree_uri) ----------------------------

// A route path. Without '*' it is an exact path (':' is literal). Otherwise the part before
// the first '*' is a prefix, and when the rest is more than a single trailing '*' the path
// also carries a glob that must match the remainder of the request path after the prefix.
//   "/a"      -> exact "/a"
//   "/a/*"    -> prefix "/a/"
//   "/a*"     -> prefix "/a"
//   "*"       -> prefix "" (everything)
//   "/a/*/b"  -> prefix "/a/", glob "*/b"
struct UriPattern {
  bool is_prefix = false;
  std::string_view literal;  // the exact path, or the prefix
  std::string_view glob;     // empty when there is no post-check
};
UriPattern ParseUriPattern(std::string_view uri);

// A route host. "*.a.com" is a wildcard on suffix ".a.com" (matches "x.a.com", "x.y.a.com"
// and ".a.com", not "a.com"); "*" alone is a wildcard on the empty suffix (any host).
// Anything else is an exact host.
struct HostPattern {
  bool is_wildcard = false;
  std::string_view literal;  // the exact host, or the suffix
};
HostPattern ParseHostPattern(std::string_view host);

// Full match of `text` against `pattern`, where '*' matches any run of bytes (including '/'
// and the empty run) and every other byte matches itself.
bool GlobMatch(std::string_view pattern, std::string_view text);

// --- With path parameters (radixtree_uri_with_parameter) ------------------------------------
//
// A segment (the bytes between two '/', or the start and the first '/') that starts with ':'
// is a parameter: `:name` matches one non-empty segment (`[^/]+`) and captures it. A segment
// that starts with '*' is a rest: `*name` matches any run of bytes, '/' included and possibly
// empty (`.*`, greedy), and captures it when the name is not empty. A '*' inside a segment is
// an anonymous rest as well; a ':' inside a segment is a literal. As in lua-resty-radixtree,
// the route is bucketed on the bytes before the first ':' or '*' (a prefix), and the rest of
// the uri must then match the rest of the path in full. (lua-resty-radixtree skips that check
// when the uri names nothing, so there "/file:list" acts as the prefix "/file"; Turnpike
// always checks.)
//   "/user/:id"          -> prefix "/user/", check ":id"
//   "/user/:id/posts/*r" -> prefix "/user/", check ":id/posts/*r"
//   "/files/*"           -> prefix "/files/" (a lone trailing '*' needs no check)
//   "/file:list"         -> prefix "/file",  check ":list" (a literal ':')
//   "/a/b"               -> exact "/a/b"
struct ParamUriPattern {
  bool is_prefix = false;
  std::string_view literal;  // the exact path, or the prefix
  bool has_check = false;    // uri.substr(literal.size()) must match the rest of the path
};
ParamUriPattern ParseParamUriPattern(std::string_view uri);

// One piece of the checked part of a param-mode uri.
struct PathToken {
  enum class Kind : unsigned char { kLiteral, kParam, kRest };
  Kind kind = Kind::kLiteral;
  std::string_view text;  // kLiteral: the bytes; kParam/kRest: the name ("" = not captured)
};

// The most rests ('*') one uri may hold; a uri with more never matches.
inline constexpr size_t kMaxPathRests = 8;

// Control thread. Appends the tokens of uri.substr(from) to *out (views into `uri`), reading
// segment starts relative to the whole uri. Returns false when the uri has more than
// kMaxPathRests rests (nothing is appended then).
bool TokenizeParamUri(std::string_view uri, size_t from, std::vector<PathToken>* out);

// Full match of `text` against tokens[0, count). Rests are greedy, leftmost first (the
// semantics of the regular expression lua-resty-radixtree builds). On success appends the
// captured parameters to *params (when not null) in uri order; on failure *params may hold
// partial captures. Allocation-free; about O(|text| x tokens) in the worst case, with no
// backtracking explosion whatever the number of rests.
bool MatchPathTokens(const PathToken* tokens, size_t count, std::string_view text,
                     PathParams* params);

}  // namespace turnpike::router
