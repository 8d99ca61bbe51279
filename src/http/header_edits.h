// HeaderEdits: the header changes plugins asked for on one message (set, add, remove), with
// storage reused between requests (no allocation once warm). The encoders in this module
// apply them: a Set or Remove replaces or drops the message's own header of that name, an
// Add keeps it; the last Set/Remove of a name wins. Names compare case-insensitively.
//
// Not thread-safe; owned by one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::http {

// A header change requested by a plugin; the last edit of a name wins.
struct HeaderEdit {
  std::string name;
  std::string value;
  bool remove = false;
  bool append = false;      // add_header: keeps the original and earlier values of the name
  bool superseded = false;  // a later Set/Remove names it too
};

// Edits with storage reused between requests (no allocation once warm). Lookups first test a
// 64-bit set of the edited names' lengths, so a name no edit can match costs one AND, whatever
// the number of edits; Push() marks the edits a Set/Remove supersedes, so ForEachSet is linear.
class HeaderEdits {
 public:
  void Clear() {
    count_ = 0;
    lengths_ = replace_lengths_ = 0;
  }
  void Set(std::string_view name, std::string_view value) { Push(name, value, false); }
  void Remove(std::string_view name) { Push(name, {}, true); }
  void Add(std::string_view name, std::string_view value) { Push(name, value, false, true); }
  bool empty() const { return count_ == 0; }
  // True when some Set/Remove names `name` (the original header is then replaced or
  // dropped; Add keeps it).
  bool Touches(std::string_view name) const;
  // Calls fn(name, value) for the headers the edits add: every Set or Add not followed by a
  // Set/Remove of the same name.
  template <typename Fn>
  void ForEachSet(Fn&& fn) const {
    for (size_t i = 0; i < count_; ++i) {
      const HeaderEdit& e = edits_[i];
      if (!e.remove && !e.superseded) fn(e.name, e.value);
    }
  }
  // What the newest edit of `name` says: nullopt when no edit names it, nullptr when it is a
  // Remove, else the value it set or added.
  std::optional<const std::string*> Decides(std::string_view name) const;

 private:
  void Push(std::string_view name, std::string_view value, bool remove, bool append = false);
  static uint64_t LengthBit(std::string_view name) { return uint64_t{1} << (name.size() & 63); }
  std::vector<HeaderEdit> edits_;
  size_t count_ = 0;
  uint64_t lengths_ = 0;          // LengthBit of every edit's name
  uint64_t replace_lengths_ = 0;  // of the Set/Remove edits' names
};

}  // namespace turnpike::http
