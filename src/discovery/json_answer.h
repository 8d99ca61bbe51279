// Parsing discovery answers: simdjson, one parser per thread, reused answer after answer.
//
// A 10k-instance nacos or consul answer (~3.5 MB) parsed into an nlohmann::json document took
// ~60 ms of the control thread's CPU and ~10 MB of small allocations, freed again; simdjson
// parses the same text at ~1.5 GB/s into buffers it keeps (about three times the largest answer
// met so far: the text's padded copy and the tape), so a parse allocates nothing once the
// parser has met an answer of that size. The kubernetes informer keeps a parser of its own (its
// list pages outlive one call).
//
// An element from AnswerParser() is valid until the thread's next AnswerParser().parse(): read
// what you need, then return. The member readers below serve every provider's answers (and
// the informer's own documents). Thread rules: any thread (the parser is thread_local).
#pragma once

#include <simdjson.h>

#include <string_view>

namespace turnpike::discovery {

simdjson::dom::parser& AnswerParser();

// AnswerParser().parse(text): the root element, or false when `text` is not one JSON value.
inline bool ParseAnswer(std::string_view text, simdjson::dom::element* root) {
  return AnswerParser().parse(text.data(), text.size()).get(*root) == simdjson::SUCCESS;
}

// obj[key] into `out`; false when `obj` is not an object or the member is absent or null.
inline bool JsonMember(simdjson::dom::element obj, const char* key, simdjson::dom::element* out) {
  return obj[key].get(*out) == simdjson::SUCCESS && !out->is_null();
}

// obj[key] when it is a string, else "" (also when `obj` is not an object).
inline std::string_view JsonStringMember(simdjson::dom::element obj, const char* key) {
  std::string_view v;
  return obj[key].get_string().get(v) == simdjson::SUCCESS ? v : std::string_view();
}

}  // namespace turnpike::discovery
