#include "config/env_subst.h"

#include <gtest/gtest.h>

#include <map>

#include "config_test_util.h"

namespace turnpike::config {
namespace {

using testing::Strings;

class EnvSubstTest : public ::testing::Test {
 protected:
  std::optional<std::string> Run(std::string_view text) {
    errors_.clear();
    return SubstituteEnv(text, "f.yaml", lookup_, &errors_);
  }

  std::map<std::string, std::string> env_ = {{"HOST", "10.0.0.1"}, {"PORT", "8080"}, {"EMPTY", ""}};
  EnvLookup lookup_ = [this](const std::string& name) -> std::optional<std::string> {
    auto it = env_.find(name);
    if (it == env_.end()) return std::nullopt;
    return it->second;
  };
  std::vector<ConfigError> errors_;
};

TEST_F(EnvSubstTest, TextWithoutReferencesIsUnchanged) {
  EXPECT_EQ(Run("a: 1\nb: $HOST ${HOST} {{HOST}}\n"), "a: 1\nb: $HOST ${HOST} {{HOST}}\n");
  EXPECT_TRUE(errors_.empty());
}

TEST_F(EnvSubstTest, ReplacesVariables) {
  EXPECT_EQ(Run("addr: ${{HOST}}:${{PORT}}\n"), "addr: 10.0.0.1:8080\n");
  EXPECT_EQ(Run("addr: ${{ HOST }}"), "addr: 10.0.0.1");
  EXPECT_EQ(Run("p: \"${{PORT}}\"\nq: x\n"), "p: \"8080\"\nq: x\n");
}

TEST_F(EnvSubstTest, DefaultsApplyOnlyWhenUnset) {
  EXPECT_EQ(Run("a: ${{NOPE:=9090}}\n"), "a: 9090\n");
  EXPECT_EQ(Run("a: ${{ NOPE := 9090 }}\n"), "a: 9090\n");
  EXPECT_EQ(Run("a: ${{PORT:=9090}}\n"), "a: 8080\n");
  EXPECT_EQ(Run("a: ${{NOPE:=http://h:80/x}}\n"), "a: http://h:80/x\n");
  EXPECT_EQ(Run("a: ${{NOPE:=}}x\n"), "a: x\n");
  // Set but empty wins over the default (Lua `getenv(v) or default`).
  EXPECT_EQ(Run("a: [${{EMPTY:=d}}]\n"), "a: []\n");
  EXPECT_TRUE(errors_.empty());
}

TEST_F(EnvSubstTest, MissingVariableIsAnErrorWithPosition) {
  EXPECT_EQ(Run("a: 1\nb:  ${{NOPE}}\nc: ${{HOST}} ${{ALSO_NOPE}}\n"), std::nullopt);
  EXPECT_EQ(Strings(errors_),
            (std::vector<std::string>{
                "f.yaml:2:5: environment variable `NOPE` is not set and has no default (use "
                "${{NOPE:=value}})",
                "f.yaml:3:14: environment variable `ALSO_NOPE` is not set and has no default "
                "(use ${{ALSO_NOPE:=value}})"}));
}

TEST_F(EnvSubstTest, MalformedNameIsAnError) {
  EXPECT_EQ(Run("a: ${{BAD-NAME}}\n"), std::nullopt);
  EXPECT_EQ(Strings(errors_),
            (std::vector<std::string>{"f.yaml:1:4: invalid environment variable reference "
                                      "`${{BAD-NAME}}`: the name must be letters, digits and "
                                      "underscores"}));
  EXPECT_EQ(Run("a: ${{ }}\n"), std::nullopt);
}

TEST_F(EnvSubstTest, FullLineCommentsAndUnclosedReferencesAreKept) {
  EXPECT_EQ(Run("  # port: ${{NOPE}}\na: 1 # ${{HOST}}\n"),
            "  # port: ${{NOPE}}\na: 1 # 10.0.0.1\n");
  EXPECT_EQ(Run("a: ${{HOST\nb: }}\n"), "a: ${{HOST\nb: }}\n");
  EXPECT_TRUE(errors_.empty());
}

TEST_F(EnvSubstTest, ProcessEnvReadsTheEnvironment) {
  testing::ScopedEnv set("TURNPIKE_CONFIG_TEST_VAR", "v1");
  testing::ScopedEnv unset("TURNPIKE_CONFIG_TEST_UNSET", std::nullopt);
  EnvLookup env = ProcessEnv();
  EXPECT_EQ(env("TURNPIKE_CONFIG_TEST_VAR"), "v1");
  EXPECT_EQ(env("TURNPIKE_CONFIG_TEST_UNSET"), std::nullopt);
}

TEST_F(EnvSubstTest, InValueSubstitutesTheWholeValue) {
  std::vector<ConfigError> errors;
  bool used = true;
  EXPECT_EQ(SubstituteEnvInValue("plain", {"f.json", 3, 10}, lookup_, &errors, &used), "plain");
  EXPECT_FALSE(used);
  EXPECT_EQ(SubstituteEnvInValue("# ${{PORT}}", {"f.json", 3, 10}, lookup_, &errors, &used),
            "# 8080");  // no comment rule inside a value
  EXPECT_TRUE(used);
  EXPECT_EQ(SubstituteEnvInValue("${{HOST}}:${{ NOPE := 1 }}", {"f.json", 1, 1}, lookup_,
                                 &errors, &used),
            "10.0.0.1:1");
  EXPECT_TRUE(used);
  EXPECT_EQ(SubstituteEnvInValue("${{EMPTY}}", {"f.json", 1, 1}, lookup_, &errors, &used), "");
  EXPECT_TRUE(used);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(SubstituteEnvInValue("ab${{NOPE}}", {"f.json", 3, 10}, lookup_, &errors, &used),
            std::nullopt);
  EXPECT_EQ(Strings(errors), (std::vector<std::string>{
                                 "f.json:3:12: environment variable `NOPE` is not set and has "
                                 "no default (use ${{NOPE:=value}})"}));
}

}  // namespace
}  // namespace turnpike::config
