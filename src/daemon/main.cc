// turnpike: the composition root. Parses the command line, loads config.yaml, and hands over
// to the control thread (daemon/control.h).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <thread>

#include "config/loader.h"
#include "daemon/builtin_plugins.h"
#include "daemon/check.h"
#include "daemon/control.h"
#include "daemon/options.h"
#include "http/parser.h"
#include "logging/log_writer.h"

namespace {

spdlog::level::level_enum LevelFromNginx(const std::string& level) {
  if (level == "debug") return spdlog::level::debug;
  if (level == "info" || level == "notice") return spdlog::level::info;
  if (level == "warn") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  return spdlog::level::critical;  // crit, alert, emerg
}

}  // namespace

int main(int argc, char** argv) {
  using namespace turnpike;
  daemon::Options opt;
  std::string error;
  if (!daemon::ParseOptions(argc, argv, &opt, &error)) {
    std::fprintf(stderr, "turnpike: %s\n%s", error.c_str(), daemon::Usage());
    return 2;
  }
  if (opt.help) {
    std::fputs(daemon::Usage(), stdout);
    return 0;
  }
  if (opt.version) {
    std::printf("turnpike %s\n", TURNPIKE_VERSION);
    return 0;
  }
  if (const char* why = nullptr; !http::CpuCanRunParser(&why)) {
    std::fprintf(stderr, "turnpike: %s\n", why);
    return 1;
  }
  auto logger = spdlog::stderr_color_mt("turnpike");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y/%m/%d %H:%M:%S [%l] %v");

  int cores = static_cast<int>(std::thread::hardware_concurrency());
  config::LoadResult<config::GatewayConfig> gw = config::LoadGatewayConfig(opt.config_path, cores);
  int problems = 0;
  for (const config::ConfigError& w : gw.warnings) {
    std::fprintf(stderr, "%s (warning)\n", w.ToString().c_str());
  }
  for (const config::ConfigError& e : gw.errors) {
    std::fprintf(stderr, "%s\n", e.ToString().c_str());
    ++problems;
  }
  if (!gw.value) {
    std::fprintf(stderr, "turnpike: %s: configuration rejected\n", opt.config_path.c_str());
    return 1;
  }
  if (!opt.routes_path.empty()) gw.value->routes_file = opt.routes_path;

  if (opt.check_only) {
    proxy::PluginRegistry registry;
    // file-logger instances name their files; a writer that is never written to opens none.
    daemon::RegisterBuiltinPlugins(&registry, std::make_shared<logging::LogWriter>());
    daemon::CheckResult check = daemon::CheckRoutes(*gw.value, registry, stderr);
    problems += check.problems;
    if (problems > 0 || !check.loaded) {
      std::fprintf(stderr, "turnpike: configuration check failed (%d error%s)\n", problems,
                   problems == 1 ? "" : "s");
      return 1;
    }
    std::printf("turnpike: %s and %s are valid (%zu routes, %zu upstreams)\n",
                opt.config_path.c_str(), gw.value->routes_file.c_str(), check.routes,
                check.upstreams);
    return 0;
  }

  spdlog::set_level(LevelFromNginx(gw.value->error_log_level));
  int rc = 0;
  {
    daemon::Control control(std::make_shared<const config::GatewayConfig>(std::move(*gw.value)));
    rc = control.Run();
  }
  spdlog::shutdown();
  return rc;
}
