// Request path normalization, as nginx computes `$uri` (which APISIX routes on): percent
// escapes decoded, runs of '/' merged, "." and ".." segments resolved.
#pragma once

#include <string>
#include <string_view>

namespace turnpike::http {

// True when `path` is already normal (no '%', no "//", no "." or ".." segment), so it can be
// used as is. Worker, hot path: one pass, no allocation.
bool IsNormalPath(std::string_view path);

// Writes the normalized form of `path` (which starts with '/') into `out` (its capacity is
// reused). Returns false for a path nginx rejects with 400: a bad escape ("%zz", "%4"), an
// escaped NUL, or ".." above the root.
bool NormalizePath(std::string_view path, std::string* out);

}  // namespace turnpike::http
