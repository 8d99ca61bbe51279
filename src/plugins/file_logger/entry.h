// file-logger: the log entry of one request as one line of JSON (APISIX's log-util
// get_log_entry): a custom log_format, or the full default entry.
//
// Worker thread, log phase. Written straight into `out` (no JSON tree, no allocation once
// `out`, the scratch buffers and the context's buffers are warm). Strings are escaped like
// lua-cjson as APISIX configures it: '"', '\\' and control characters; '/' and bytes >= 0x80 go
// through as they are.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "plugins/file_logger/config.h"
#include "turnpike/plugin.h"

namespace turnpike::plugins::file_logger {

// Appends `s` as a JSON string (with quotes).
void AppendJsonString(std::string* out, std::string_view s);

// What the body phases collected for the entry (nullopt: leave the field out).
struct CollectedBodies {
  std::optional<std::string_view> request;
  std::optional<std::string_view> response;
};

// Buffers FormatEntry() reuses from one entry to the next (file-logger keeps them in its
// worker state), so that formatting allocates nothing once they are warm.
struct EntryScratch {
  std::string url;                // the default entry's request.url
  std::string key, other, value;  // query arguments, unescaped
};

// The entry for `ctx` under `config`, appended to `out`.
void FormatEntry(PluginContext& ctx, const Config& config, const CollectedBodies& bodies,
                 EntryScratch* scratch, std::string* out);
// Tests and tools: the same with scratch buffers of its own (allocated per call).
void FormatEntry(PluginContext& ctx, const Config& config, const CollectedBodies& bodies,
                 std::string* out);

}  // namespace turnpike::plugins::file_logger
