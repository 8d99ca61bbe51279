#include "discovery/json_answer.h"

namespace turnpike::discovery {

simdjson::dom::parser& AnswerParser() {
  static thread_local simdjson::dom::parser parser;
  return parser;
}

}  // namespace turnpike::discovery
