// HeaderEdits: the header changes plugins asked for on one message (set, add, remove), with
// storage reused between requests (no allocation once warm). The encoders in this module
// apply them: a Set or Remove replaces or drops the message's own header of that name, an
// Add keeps it; the last Set/Remove of a name wins. Names compare case-insensitively.
//
// Each Set/Add is rendered once, when it is pushed, into the line the encoders send
// ("Name: value\r\n"), with control bytes (CR, LF, NUL, the rest below 0x20, DEL) as %XX:
// whatever a template rendered into a value, it cannot end a line of the head. The value as
// the plugin gave it stays readable (Decides) for later plugins and the log.
//
// Storage: lines go into chunks that are never moved, so every view handed out (names,
// values, lines) stays valid until Clear(), whatever is pushed meanwhile.
//
// Not thread-safe; owned by one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/string_writer.h"

namespace turnpike::http {

// A header change requested by a plugin; the last edit of a name wins. Views into the
// edits' storage, valid until HeaderEdits::Clear().
struct HeaderEdit {
  std::string_view name;        // as given, control bytes as %XX
  std::string_view value;       // as given (empty for a Remove)
  std::string_view safe_value;  // control bytes as %XX (the same bytes as `value` when clean)
  std::string_view line;        // "name: safe_value\r\n" (empty for a Remove)
  bool remove = false;
  bool append = false;      // add_header: keeps the original and earlier values of the name
  bool superseded = false;  // a later Set/Remove names it too
};

// True when `s` has a byte below `lowest` or DEL. Eight bytes at a time (values are almost
// always clean, and this runs on every value a plugin hands in).
bool HasControlByte(std::string_view s, unsigned char lowest = 0x20);
// The index of the first byte of `s` from `from` on that is below `lowest` or DEL, or
// s.size().
size_t FindControlByte(std::string_view s, size_t from = 0, unsigned char lowest = 0x20);
// Appends `s` with its bytes below `lowest` and DEL as %XX (`lowest` 0x21: spaces too).
void AppendEscapingControls(base::StringWriter& out, std::string_view s,
                            unsigned char lowest = 0x20);

// Edits with storage reused between requests (no allocation once warm). Lookups first test a
// 64-bit set of the edited names' lengths, so a name no edit can match costs one AND, whatever
// the number of edits; Push() marks the edits a Set/Remove supersedes, so ForEachSet is linear.
class HeaderEdits {
 public:
  HeaderEdits() = default;
  HeaderEdits(const HeaderEdits&) = delete;
  HeaderEdits& operator=(const HeaderEdits&) = delete;

  void Clear() {
    count_ = 0;
    lengths_ = replace_lengths_ = 0;
    chunk_ = 0;
    used_ = 0;
  }
  void Set(std::string_view name, std::string_view value) { Push(name, value, false); }
  void Remove(std::string_view name) { Push(name, {}, true); }
  void Add(std::string_view name, std::string_view value) { Push(name, value, false, true); }
  bool empty() const { return count_ == 0; }
  // True when some Set/Remove names `name` (the original header is then replaced or
  // dropped; Add keeps it).
  bool Touches(std::string_view name) const;
  // Calls fn(const HeaderEdit&) for the headers the edits add: every Set or Add not followed
  // by a Set/Remove of the same name, in the order they were made.
  template <typename Fn>
  void ForEachSet(Fn&& fn) const {
    for (size_t i = 0; i < count_; ++i) {
      const HeaderEdit& e = edits_[i];
      if (!e.remove && !e.superseded) fn(e);
    }
  }
  // The newest edit of `name` (its `remove` says whether it is a Remove; for an Add, its value
  // is one of the values, which is what a single-value lookup can report), or nullptr when
  // no edit names it.
  const HeaderEdit* Decides(std::string_view name) const;

 private:
  struct Chunk {
    std::unique_ptr<char[]> bytes;
    size_t size = 0;
  };
  static constexpr size_t kChunkSize = 4096;

  void Push(std::string_view name, std::string_view value, bool remove, bool append = false);
  // Push's rare case, out of its way: a name or value with control bytes. `value` is the copy
  // Push made (it stays readable as given).
  [[gnu::noinline, gnu::cold]] void PushEscaped(HeaderEdit& e, std::string_view name,
                                                std::string_view value, bool remove);
  // `n` contiguous bytes that stay put until Clear().
  char* Reserve(size_t n) {
    if (chunk_ < chunks_.size() && chunks_[chunk_].size - used_ >= n) {
      char* p = chunks_[chunk_].bytes.get() + used_;
      used_ += n;
      return p;
    }
    return ReserveInNextChunk(n);
  }
  char* ReserveInNextChunk(size_t n);
  static uint64_t LengthBit(std::string_view name) { return uint64_t{1} << (name.size() & 63); }

  std::vector<HeaderEdit> edits_;
  size_t count_ = 0;
  uint64_t lengths_ = 0;          // LengthBit of every edit's name
  uint64_t replace_lengths_ = 0;  // of the Set/Remove edits' names
  std::vector<Chunk> chunks_;
  size_t chunk_ = 0;     // the chunk being filled
  size_t used_ = 0;      // bytes of it in use
  std::string scratch_;  // an edit with control bytes, escaped
};

}  // namespace turnpike::http
