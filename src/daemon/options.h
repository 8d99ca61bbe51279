// Command line of the turnpike binary.
#pragma once

#include <string>

namespace turnpike::daemon {

struct Options {
  std::string config_path = "conf/config.yaml";  // -c / --config
  std::string routes_path;                       // -r / --routes: overrides the config's
  bool check_only = false;                       // `check` subcommand or -t / --test
  bool version = false;                          // -v / --version
  bool help = false;                             // -h / --help
};

// Parses argv. On a usage error returns false and sets `error`.
bool ParseOptions(int argc, char** argv, Options* out, std::string* error);

const char* Usage();

}  // namespace turnpike::daemon
