// Parsing and freeing discovery answers without holding the CPU.
//
// A kubernetes watch event of 250 endpoints, a 10k-instance nacos or consul answer: parsing one
// into an nlohmann::json document, or freeing the document, is one library call of 0.1–0.5 ms
// with no courtesy point inside (base/courtesy.h). On the control thread, which shares its CPU
// with a worker, a worker woken meanwhile waits for the whole call: under node churn
// (bench/node_churn.sh) those calls were most of the control thread's runs over 0.3 ms. These
// do the same work with a courtesy point per JSON token or value.
//
// Thread rules: any thread (the points only yield on threads that opted in).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace turnpike::discovery {

// nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false): a discarded value when
// `text` is not one JSON value.
nlohmann::json ParseJsonCourteously(std::string_view text);

// Frees `doc`'s values one at a time (deepest first, no recursion); leaves `doc` null.
void FreeJsonCourteously(nlohmann::json& doc);

// Frees a document with FreeJsonCourteously when it goes out of scope (every return path).
class JsonFreeGuard {
 public:
  explicit JsonFreeGuard(nlohmann::json& doc) : doc_(doc) {}
  ~JsonFreeGuard() { FreeJsonCourteously(doc_); }
  JsonFreeGuard(const JsonFreeGuard&) = delete;
  JsonFreeGuard& operator=(const JsonFreeGuard&) = delete;

 private:
  nlohmann::json& doc_;
};

}  // namespace turnpike::discovery
