// Fuzz target: the JSON config provider (apisix.json, ParseRoutesConfigJson); a file that
// loads is then built into a snapshot as the daemon would (config_pipeline.h).
//
// Checked: no crash, UB, exception or timeout; a rejected file reports an error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/loader.h"
#include "fuzz/config_pipeline.h"
#include "fuzz/fuzz_util.h"

namespace config = turnpike::config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  config::LoadResult<config::RoutesConfig> routes =
      config::ParseRoutesConfigJson(turnpike::fuzz::AsText(data, size), "apisix.json");
  turnpike::fuzz::RunConfigPipeline(&routes, nullptr);
  return 0;
}
