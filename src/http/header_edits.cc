#include "http/header_edits.h"

#include "base/strings.h"

namespace turnpike::http {

void HeaderEdits::Push(std::string_view name, std::string_view value, bool remove, bool append) {
  const uint64_t bit = LengthBit(name);
  if (!append && (lengths_ & bit) != 0) {
    for (size_t i = 0; i < count_; ++i) {
      HeaderEdit& earlier = edits_[i];
      if (!earlier.superseded && base::EqualsIgnoreCase(earlier.name, name)) {
        earlier.superseded = true;
      }
    }
  }
  if (count_ == edits_.size()) edits_.emplace_back();
  HeaderEdit& e = edits_[count_++];
  e.name.assign(name);
  e.value.assign(value);
  e.remove = remove;
  e.append = append;
  e.superseded = false;
  lengths_ |= bit;
  if (!append) replace_lengths_ |= bit;
}

bool HeaderEdits::Touches(std::string_view name) const {
  if ((replace_lengths_ & LengthBit(name)) == 0) return false;
  for (size_t i = 0; i < count_; ++i) {
    if (!edits_[i].append && base::EqualsIgnoreCase(edits_[i].name, name)) return true;
  }
  return false;
}

std::optional<const std::string*> HeaderEdits::Decides(std::string_view name) const {
  if ((lengths_ & LengthBit(name)) == 0) return std::nullopt;
  for (size_t i = count_; i-- > 0;) {
    const HeaderEdit& e = edits_[i];
    if (!base::EqualsIgnoreCase(e.name, name)) continue;
    if (e.remove) return nullptr;
    // The newest value wins for a Set; for an Add it is one of the values, which is what a
    // single-value lookup can report.
    return &e.value;
  }
  return std::nullopt;
}

}  // namespace turnpike::http
