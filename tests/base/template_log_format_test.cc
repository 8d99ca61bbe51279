// Template with nginx's log_format rules (the access log): the syntax, the errors a strict
// compile reports, nginx's default and JSON escaping of values, and "-" for missing ones.
// APISIX's resolve_var syntax is tested with the other public faces (tests/sdk/).

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/alloc_counter.h"
#include "turnpike/template.h"

namespace turnpike {
namespace {

class MapVars final : public RequestVars {
 public:
  std::optional<std::string_view> Get(const VarRef& var) override {
    auto it = vars.find(var.source);
    if (it == vars.end()) return std::nullopt;
    return std::string_view(it->second);
  }
  std::map<std::string, std::string> vars;
};

constexpr Template::Options kNginxDefault = {
    .nginx_syntax = true, .escape = Template::Escape::kDefault, .missing = "-"};
constexpr Template::Options kNginxJson = {.nginx_syntax = true, .escape = Template::Escape::kJson};

std::string Error(std::string_view text, Template::Options options = kNginxDefault) {
  StatusOr<Template> t = Template::CompileStrict(text, options);
  return t.ok() ? "ok" : t.status().message();
}

std::string Render(std::string_view text, MapVars& vars, Template::Options options) {
  StatusOr<Template> t = Template::CompileStrict(text, options);
  EXPECT_TRUE(t.ok()) << t.status().message();
  std::string out = "garbage";
  if (t.ok()) t.value().Render(vars, &out);
  return out;
}

TEST(TemplateLogFormatTest, StrictCompileNamesTheBadReference) {
  EXPECT_EQ(Error("$status $nope"), "unknown variable \"$nope\" at offset 8");
  EXPECT_EQ(Error("${nope}x"), "unknown variable \"${nope}\" at offset 0");
  EXPECT_EQ(Error("a $"), "\"$\" at offset 2 is not followed by a variable name");
  EXPECT_EQ(Error("a $ b"), "\"$\" at offset 2 is not followed by a variable name");
  EXPECT_EQ(Error("[${status"), "\"${status\" at offset 1 has no closing \"}\"");
  EXPECT_EQ(Error("${}"), "invalid variable name \"${}\" at offset 0");
  EXPECT_EQ(Error("${ status }"), "invalid variable name \"${ status }\" at offset 0");
  EXPECT_EQ(Error("${a.b}"), "invalid variable name \"${a.b}\" at offset 0");
  EXPECT_EQ(Error("${status ?? x}"), "invalid variable name \"${status ?? x}\" at offset 0");
  // Prefix families are always known, as in nginx.
  EXPECT_EQ(Error("$http_x_anything $arg_q $cookie_c"), "ok");
  // APISIX's syntax, strict: only unknown names are errors (a lone `$` is text there).
  EXPECT_EQ(Error("price $ $nope", {}), "unknown variable \"$nope\" at offset 8");
  EXPECT_EQ(Error("price $ ${}", {}), "ok");
  // The lenient compile keeps going: the unknown name is missing, the lone `$` text.
  MapVars vars;
  std::string out;
  Template::Compile("$nope|$|${x", kNginxDefault).Render(vars, &out);
  EXPECT_EQ(out, "-|$|${x");
}

TEST(TemplateLogFormatTest, NginxNamesStopAtNonWordCharacters) {
  MapVars vars;
  vars.vars = {{"status", "200"}, {"uri", "/a"}, {"upstream_host", "h"}};
  // `.` ends a name (APISIX's syntax would read `$status.` as the variable "status.").
  EXPECT_EQ(Render("$status.$uri|${status}x|\\$uri", vars, kNginxDefault), "200./a|200x|\\/a");
  EXPECT_EQ(Render("$upstream_host$uri", vars, kNginxDefault), "h/a");
  EXPECT_TRUE(Template::Compile("$status.", kNginxDefault).Reads(VarRef::Kind::kBuiltin));
  EXPECT_FALSE(Template::Compile("$status.", {}).Reads(VarRef::Kind::kBuiltin));
}

TEST(TemplateLogFormatTest, MissingValuesAreDashWithDefaultEscapingEmptyWithJson) {
  MapVars vars;
  vars.vars = {{"status", "404"}, {"http_referer", ""}};
  EXPECT_EQ(
      Render("$status \"$http_user_agent\" \"$http_referer\" $upstream_addr", vars, kNginxDefault),
      "404 \"-\" \"\" -");
  EXPECT_EQ(Render("{\"ua\":\"$http_user_agent\",\"s\":$status}", vars, kNginxJson),
            "{\"ua\":\"\",\"s\":404}");
}

TEST(TemplateLogFormatTest, DefaultEscapingIsNginxs) {
  MapVars vars;
  vars.vars = {{"http_user_agent", std::string("a\"b\\c\x01\x1f\x7f\xc3\xa9 ~", 12)}};
  // The format's own quotes stay; the value's are \x22, non-printable bytes \xHH.
  EXPECT_EQ(Render("\"$http_user_agent\"", vars, kNginxDefault),
            "\"a\\x22b\\x5Cc\\x01\\x1F\\x7F\\xC3\\xA9 ~\"");
}

TEST(TemplateLogFormatTest, JsonEscapingIsNginxs) {
  MapVars vars;
  vars.vars = {{"http_user_agent", std::string("a\"b\\c\n\r\t\b\f\x01\x1f\x7f\xc3\xa9/", 16)}};
  EXPECT_EQ(Render("{\"ua\":\"$http_user_agent\"}", vars, kNginxJson),
            "{\"ua\":\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001F\x7f\xc3\xa9/\"}");
}

TEST(TemplateLogFormatTest, NoEscapingAndApisixSyntaxRenderValuesAsIs) {
  MapVars vars;
  vars.vars = {{"uri", "/a\"b"}};
  EXPECT_EQ(Render("$uri $http_x", vars, {.nginx_syntax = true}), "/a\"b ");
  EXPECT_EQ(Render("$uri ${http_x ?? d}", vars, {}), "/a\"b d");
}

TEST(TemplateLogFormatTest, EscapedRenderingDoesNotAllocateOnceWarm) {
  MapVars vars;
  vars.vars = {{"http_user_agent", "Mozilla/5.0 \"quoted\" and a long enough tail to allocate"},
               {"status", "200"}};
  for (Template::Options o : {kNginxDefault, kNginxJson}) {
    StatusOr<Template> t = Template::CompileStrict("$status \"$http_user_agent\" $http_x", o);
    ASSERT_TRUE(t.ok());
    std::string out;
    t.value().Render(vars, &out);
    uint64_t before = turnpike::testing::ThreadAllocations();
    for (int i = 0; i < 100; ++i) t.value().Render(vars, &out);
    EXPECT_EQ(turnpike::testing::ThreadAllocations() - before, 0u);
  }
}

}  // namespace
}  // namespace turnpike
