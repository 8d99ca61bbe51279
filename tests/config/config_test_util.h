// Helpers shared by the config tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "config/specs.h"
#include "config/yaml_tree.h"

namespace turnpike::config::testing {

// Sets (or unsets, with nullopt) an environment variable for the lifetime of the guard.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// The errors (or warnings) as printed strings, for exact comparisons.
inline std::vector<std::string> Strings(const std::vector<ConfigError>& errors) {
  std::vector<std::string> out;
  for (const ConfigError& e : errors) out.push_back(e.ToString());
  return out;
}

// Parses `text` as YAML and returns the first document's root. The document is kept for the
// rest of the test program, so the handle stays valid.
inline YamlNode LoadYaml(const std::string& text) {
  static std::deque<YamlDocument> documents;
  std::string error;
  std::optional<YamlDocument> doc = YamlDocument::Parse(text, &error);
  if (!doc) {
    ADD_FAILURE() << "invalid YAML in test: " << error;
    return YamlNode();
  }
  documents.push_back(std::move(*doc));
  return documents.back().root();
}

}  // namespace turnpike::config::testing
