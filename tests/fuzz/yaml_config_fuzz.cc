// Fuzz target: the YAML config loader. The input is parsed as apisix.yaml
// (ParseRoutesConfig; when it lacks the `#END` marker, also with one appended, so mutations
// reach past that check) and as config.yaml (ParseGatewayConfig); a routes file that loads is
// then built into a snapshot as the daemon would (config_pipeline.h).
//
// Checked: no crash, UB, exception or timeout; a rejected file reports an error.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/loader.h"
#include "fuzz/config_pipeline.h"
#include "fuzz/fuzz_util.h"

namespace config = turnpike::config;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = turnpike::fuzz::AsText(data, size);

  config::LoadResult<config::GatewayConfig> gateway =
      config::ParseGatewayConfig(text, "config.yaml", "conf", 2);
  turnpike::fuzz::CheckErrors(gateway.errors);
  turnpike::fuzz::CheckErrors(gateway.warnings);
  if (!gateway.value) FUZZ_CHECK(!gateway.errors.empty());
  const config::GatewayConfig* gw = gateway.value ? &*gateway.value : nullptr;
  if (gw != nullptr) FUZZ_CHECK(gw->worker_processes >= 1);

  config::LoadResult<config::RoutesConfig> routes = config::ParseRoutesConfig(text, "apisix.yaml");
  const bool has_marker =
      text.substr(text.size() < 10 ? 0 : text.size() - 10).find("#END") != std::string_view::npos;
  if (!has_marker) {
    FUZZ_CHECK(!routes.value);
    routes = config::ParseRoutesConfig(std::string(text) + "\n#END\n", "apisix.yaml");
  }
  turnpike::fuzz::RunConfigPipeline(&routes, gw);
  return 0;
}
