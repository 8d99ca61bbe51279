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
// what you need, then return. Thread rules: any thread (the parser is thread_local).
#pragma once

#include <simdjson.h>

#include <string_view>

namespace turnpike::discovery {

simdjson::dom::parser& AnswerParser();

// AnswerParser().parse(text): the root element, or false when `text` is not one JSON value.
inline bool ParseAnswer(std::string_view text, simdjson::dom::element* root) {
  return AnswerParser().parse(text.data(), text.size()).get(*root) == simdjson::SUCCESS;
}

}  // namespace turnpike::discovery
