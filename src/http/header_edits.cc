#include "http/header_edits.h"

#include "base/strings.h"

namespace turnpike::http {

void HeaderEdits::Push(std::string_view name, std::string_view value, bool remove, bool append) {
  if (count_ == edits_.size()) edits_.emplace_back();
  HeaderEdit& e = edits_[count_++];
  e.name.assign(name);
  e.value.assign(value);
  e.remove = remove;
  e.append = append;
}

bool HeaderEdits::Touches(std::string_view name) const {
  for (size_t i = 0; i < count_; ++i) {
    if (!edits_[i].append && base::EqualsIgnoreCase(edits_[i].name, name)) return true;
  }
  return false;
}

bool HeaderEdits::IsLastFor(size_t i) const {
  for (size_t j = i + 1; j < count_; ++j) {
    if (!edits_[j].append && base::EqualsIgnoreCase(edits_[j].name, edits_[i].name)) {
      return false;
    }
  }
  return true;
}

std::optional<const std::string*> HeaderEdits::Decides(std::string_view name) const {
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
