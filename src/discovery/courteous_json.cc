#include "discovery/courteous_json.h"

#include <utility>
#include <vector>

#include "base/courtesy.h"

namespace turnpike::discovery {

nlohmann::json ParseJsonCourteously(std::string_view text) {
  // The parser calls back once per token (object and array starts and ends, keys, values);
  // keeping every value builds the same document as a parse without a callback.
  return nlohmann::json::parse(
      text.begin(), text.end(),
      [](int /*depth*/, nlohmann::json::parse_event_t /*event*/, nlohmann::json& /*parsed*/) {
        base::CourtesyPoint();
        return true;
      },
      /*allow_exceptions=*/false);
}

void FreeJsonCourteously(nlohmann::json& doc) {
  if (!doc.is_structured()) {
    doc = nullptr;
    return;
  }
  // Depth-first: the value on top gives up its last child until it has none, then goes.
  std::vector<nlohmann::json> stack;
  stack.push_back(std::move(doc));
  doc = nullptr;
  while (!stack.empty()) {
    base::CourtesyPoint();
    nlohmann::json child;
    nlohmann::json& top = stack.back();
    if (top.is_array() && !top.empty()) {
      auto& values = top.get_ref<nlohmann::json::array_t&>();
      child = std::move(values.back());
      values.pop_back();
    } else if (top.is_object() && !top.empty()) {
      auto& members = top.get_ref<nlohmann::json::object_t&>();
      child = std::move(members.extract(members.begin()).mapped());
    } else {
      stack.pop_back();  // a scalar or an emptied container
      continue;
    }
    if (child.is_structured() && !child.empty()) stack.push_back(std::move(child));
  }
}

}  // namespace turnpike::discovery
