// How route `uris` and `hosts` strings are read (reference §2.2-2.3, radixtree_host_uri, path
// parameters disabled). Shared by RouteTable and the linear reference matcher; all functions
// are pure and allocation-free.
#pragma once

#include <string_view>

namespace turnpike::router {

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

}  // namespace turnpike::router
