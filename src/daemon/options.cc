#include "daemon/options.h"

#include <string_view>

namespace turnpike::daemon {

const char* Usage() {
  return "usage: turnpike [check] [-t] [-c config.yaml] [-r apisix.yaml] [--version]\n"
         "  -c, --config FILE   gateway config (APISIX config.yaml), default conf/config.yaml\n"
         "  -r, --routes FILE   routes file (APISIX apisix.yaml), default beside the config\n"
         "  check, -t, --test   validate both files and exit 0 (valid) or 1 (errors)\n"
         "  -v, --version       print the version and exit\n"
         "signals: SIGHUP reloads the routes file (so does any change to it);\n"
         "         SIGTERM/SIGINT stop accepting, drain in-flight requests and exit\n";
}

bool ParseOptions(int argc, char** argv, Options* out, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string* dst) {
      if (i + 1 >= argc) {
        *error = std::string(a) + " needs a value";
        return false;
      }
      *dst = argv[++i];
      return true;
    };
    if (a == "check" || a == "-t" || a == "--test") {
      out->check_only = true;
    } else if (a == "-c" || a == "--config") {
      if (!value(&out->config_path)) return false;
    } else if (a == "-r" || a == "--routes") {
      if (!value(&out->routes_path)) return false;
    } else if (a == "-v" || a == "--version") {
      out->version = true;
    } else if (a == "-h" || a == "--help") {
      out->help = true;
    } else {
      *error = "unknown argument: " + std::string(a);
      return false;
    }
  }
  return true;
}

}  // namespace turnpike::daemon
