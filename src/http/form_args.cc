#include "http/form_args.h"

#include "base/strings.h"

namespace turnpike::http {

void FormArgs::Clear() {
  decoded_.clear();
  fields_.clear();
}

void FormArgs::Parse(std::string_view body) {
  Clear();
  // Unescaping never lengthens, so one reservation keeps every append in place.
  if (decoded_.capacity() < body.size()) decoded_.reserve(body.size());
  while (!body.empty()) {
    size_t amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body.remove_prefix(amp == std::string_view::npos ? body.size() : amp + 1);
    size_t eq = pair.find('=');
    Field f{};
    f.name_begin = decoded_.size();
    base::AppendFormUnescaped(&decoded_, pair.substr(0, eq));
    f.name_len = decoded_.size() - f.name_begin;
    if (f.name_len == 0) continue;  // "=x" or "&&": ngx ignores pairs without a name
    f.value_begin = decoded_.size();
    if (eq != std::string_view::npos) base::AppendFormUnescaped(&decoded_, pair.substr(eq + 1));
    f.value_len = decoded_.size() - f.value_begin;
    fields_.push_back(f);
  }
}

std::optional<std::string_view> FormArgs::Get(std::string_view name) const {
  std::string_view all = decoded_;
  for (const Field& f : fields_) {
    if (all.substr(f.name_begin, f.name_len) == name) return all.substr(f.value_begin, f.value_len);
  }
  return std::nullopt;
}

}  // namespace turnpike::http
