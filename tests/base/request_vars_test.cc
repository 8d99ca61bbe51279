#include "turnpike/request_vars.h"

#include <gtest/gtest.h>

#include <string>

namespace turnpike {
namespace {

TEST(CompileVarTest, EveryBuiltinCompilesByItsName) {
  for (int i = 0; i < static_cast<int>(BuiltinVar::kCount); ++i) {
    auto v = static_cast<BuiltinVar>(i);
    std::string_view name = BuiltinVarName(v);
    ASSERT_FALSE(name.empty()) << i;
    StatusOr<VarRef> ref = CompileVar(name);
    ASSERT_TRUE(ref.ok()) << name;
    EXPECT_EQ(ref.value().kind, VarRef::Kind::kBuiltin) << name;
    EXPECT_EQ(ref.value().builtin, v) << name;
  }
}

TEST(CompileVarTest, NginxVariablesOperatorsUse) {
  for (std::string_view name :
       {"content_type", "content_length", "server_protocol", "server_name", "hostname",
        "request", "document_uri", "request_time", "msec", "time_iso8601", "time_local",
        "connection", "connection_requests", "request_id", "pid", "bytes_sent",
        "body_bytes_sent", "upstream_scheme", "upstream_host", "upstream_addr",
        "upstream_status", "upstream_connect_time", "upstream_header_time",
        "upstream_response_time", "balancer_ip", "balancer_port", "request_body"}) {
    StatusOr<VarRef> ref = CompileVar(name);
    ASSERT_TRUE(ref.ok()) << name;
    EXPECT_EQ(ref.value().kind, VarRef::Kind::kBuiltin) << name;
    EXPECT_EQ(BuiltinVarName(ref.value().builtin), name);
  }
}

TEST(CompileVarTest, HttpVersionIsAHeaderAsInNginx) {
  // nginx has no $http_version: the name reads the "Version" request header.
  StatusOr<VarRef> ref = CompileVar("http_version");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref.value().kind, VarRef::Kind::kHeader);
  EXPECT_EQ(ref.value().name, "version");
}

TEST(CompileVarTest, UnknownNamesAreErrors) {
  StatusOr<VarRef> ref = CompileVar("no_such_var");
  ASSERT_FALSE(ref.ok());
  EXPECT_NE(ref.status().message().find("no_such_var"), std::string::npos);
}

}  // namespace
}  // namespace turnpike
