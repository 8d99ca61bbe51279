#include "http/form_args.h"

namespace turnpike::http {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  char lower = static_cast<char>(c | 0x20);
  if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
  return -1;
}

}  // namespace

void FormArgs::Clear() {
  decoded_.clear();
  fields_.clear();
}

void FormArgs::AppendDecoded(std::string_view raw) {
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '+') {
      decoded_.push_back(' ');
    } else if (c == '%' && i + 2 < raw.size() && HexDigit(raw[i + 1]) >= 0 &&
               HexDigit(raw[i + 2]) >= 0) {
      decoded_.push_back(static_cast<char>(HexDigit(raw[i + 1]) * 16 + HexDigit(raw[i + 2])));
      i += 2;
    } else {
      decoded_.push_back(c);  // includes a '%' that starts no valid escape
    }
  }
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
    AppendDecoded(pair.substr(0, eq));
    f.name_len = decoded_.size() - f.name_begin;
    if (f.name_len == 0) continue;  // "=x" or "&&": ngx ignores pairs without a name
    f.value_begin = decoded_.size();
    if (eq != std::string_view::npos) AppendDecoded(pair.substr(eq + 1));
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
