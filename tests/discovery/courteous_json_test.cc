// ParseJsonCourteously / FreeJsonCourteously (discovery/courteous_json.h): the same documents
// as nlohmann's own parse, freed without recursion, with courtesy points along the way.
#include "discovery/courteous_json.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "base/courtesy.h"

namespace turnpike::discovery {
namespace {

// An EndpointSlice-shaped watch event of `endpoints` endpoints (~200 bytes each).
std::string SliceEvent(int endpoints) {
  std::string s = R"({"type":"MODIFIED","object":{"kind":"EndpointSlice","metadata":{"name":"s-1",)"
                  R"("namespace":"default","labels":{"kubernetes.io/service-name":"churn"}},)"
                  R"("ports":[{"name":"http","port":18080}],"endpoints":[)";
  for (int i = 0; i < endpoints; ++i) {
    if (i > 0) s += ',';
    s += R"({"addresses":["10.1.)" + std::to_string(i / 250) + "." + std::to_string(i % 250) +
         R"("],"conditions":{"ready":true,"serving":true},"nodeName":"n\u00e9-1","zone":null,)"
         R"("weight":-1.5e3,"big":18446744073709551615})";
  }
  return s + "]}}";
}

TEST(CourteousJsonTest, ParsesAsNlohmannDoes) {
  for (const std::string& text :
       {SliceEvent(3), std::string(R"([1,"two",{"three":[3.5,null,false,{}]},[]])"),
        std::string("\"just a string\""), std::string("-0"),
        std::string(" {\"a\" : {\"b\":1}} ")}) {
    nlohmann::json mine = ParseJsonCourteously(text);
    EXPECT_FALSE(mine.is_discarded()) << text;
    EXPECT_EQ(mine, nlohmann::json::parse(text)) << text;
  }
}

TEST(CourteousJsonTest, InvalidTextIsDiscarded) {
  for (const char* text : {"", "{", "{\"a\":}", "[1,2", "{} trailing", "nul", "{\"a\":1,}"}) {
    EXPECT_TRUE(ParseJsonCourteously(text).is_discarded()) << text;
  }
}

TEST(CourteousJsonTest, FreeLeavesNullWhateverTheValue) {
  for (nlohmann::json doc :
       {ParseJsonCourteously(SliceEvent(50)), nlohmann::json(5), nlohmann::json("text"),
        nlohmann::json::array(), nlohmann::json::object(), nlohmann::json()}) {
    FreeJsonCourteously(doc);
    EXPECT_TRUE(doc.is_null());
  }
}

TEST(CourteousJsonTest, DeepNestingNeedsNoRecursion) {
  const int depth = 200'000;
  nlohmann::json doc = ParseJsonCourteously(std::string(depth, '[') + std::string(depth, ']'));
  ASSERT_TRUE(doc.is_array());
  FreeJsonCourteously(doc);
  EXPECT_TRUE(doc.is_null());
}

TEST(CourteousJsonTest, GuardFreesOnEveryPath) {
  nlohmann::json doc = ParseJsonCourteously(SliceEvent(10));
  {
    JsonFreeGuard guard(doc);
    EXPECT_TRUE(doc.is_object());
  }
  EXPECT_TRUE(doc.is_null());
}

// On a thread that opted in, a big parse and its free give the CPU away along the way:
// 20,000 endpoints (~4 MB) take well over the 100 us between yields, on any machine.
TEST(CourteousJsonTest, YieldsWhileParsingAndFreeing) {
  const std::string text = SliceEvent(20'000);
  std::thread([&text] {
    base::SetCourtesy(true);
    uint64_t before = base::CourtesyYields();
    nlohmann::json doc = ParseJsonCourteously(text);
    uint64_t parsed = base::CourtesyYields();
    EXPECT_EQ(doc["object"]["endpoints"].size(), 20'000u);
    FreeJsonCourteously(doc);
    uint64_t freed = base::CourtesyYields();
    base::SetCourtesy(false);
    EXPECT_GT(parsed, before);
    EXPECT_GT(freed, parsed);
  }).join();
}

}  // namespace
}  // namespace turnpike::discovery
