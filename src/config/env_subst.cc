#include "config/env_subst.h"

#include <cstdlib>

#include "base/strings.h"

namespace turnpike::config {
namespace {

constexpr std::string_view kOpen = "${{";
constexpr std::string_view kClose = "}}";

bool IsVarNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsValidVarName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsVarNameChar(c)) return false;
  }
  return true;
}

bool IsFullLineComment(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  return i != std::string_view::npos && line[i] == '#';
}

// Substitutes the references in one line (without its newline); `col_offset` is added to
// the columns of errors. Sets *used when a reference was replaced. Returns false on error.
bool SubstituteLine(std::string_view line, int line_no, int col_offset, const std::string& file,
                    const EnvLookup& lookup, std::string* out, std::vector<ConfigError>* errors,
                    bool* used) {
  bool ok = true;
  size_t pos = 0;
  while (pos < line.size()) {
    size_t open = line.find(kOpen, pos);
    if (open == std::string_view::npos) break;
    size_t close = line.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos) break;  // not a reference: keep the text as is
    out->append(line.substr(pos, open - pos));
    std::string_view ref = line.substr(open, close + kClose.size() - open);
    std::string_view inner = line.substr(open + kOpen.size(), close - open - kOpen.size());
    std::string_view name = inner;
    std::optional<std::string_view> default_value;
    if (size_t sep = inner.find(":="); sep != std::string_view::npos) {
      name = inner.substr(0, sep);
      default_value = base::TrimWhitespace(inner.substr(sep + 2));
    }
    name = base::TrimWhitespace(name);
    SourceLoc loc{file, line_no, col_offset + static_cast<int>(open) + 1};
    if (!IsValidVarName(name)) {
      errors->push_back({loc, "",
                         "invalid environment variable reference `" + std::string(ref) +
                             "`: the name must be letters, digits and underscores"});
      ok = false;
    } else if (std::optional<std::string> value = lookup(std::string(name))) {
      out->append(*value);
      *used = true;
    } else if (default_value) {
      out->append(*default_value);
      *used = true;
    } else {
      errors->push_back({loc, "",
                         "environment variable `" + std::string(name) +
                             "` is not set and has no default (use ${{" + std::string(name) +
                             ":=value}})"});
      ok = false;
    }
    pos = close + kClose.size();
  }
  out->append(line.substr(pos));
  return ok;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> SubstituteEnv(std::string_view text, const std::string& file,
                                         const EnvLookup& lookup,
                                         std::vector<ConfigError>* errors) {
  if (text.find(kOpen) == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size());
  bool ok = true;
  bool used = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t eol = text.find('\n', pos);
    size_t end = eol == std::string_view::npos ? text.size() : eol;
    std::string_view line = text.substr(pos, end - pos);
    if (IsFullLineComment(line) || line.find(kOpen) == std::string_view::npos) {
      out.append(line);
    } else if (!SubstituteLine(line, line_no, 0, file, lookup, &out, errors, &used)) {
      ok = false;
    }
    if (eol == std::string_view::npos) break;
    out.push_back('\n');
    pos = eol + 1;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::string> SubstituteEnvInValue(std::string_view value, const SourceLoc& loc,
                                                const EnvLookup& lookup,
                                                std::vector<ConfigError>* errors, bool* used) {
  *used = false;
  if (value.find(kOpen) == std::string_view::npos) return std::string(value);
  std::string out;
  int col_offset = loc.col > 0 ? loc.col - 1 : 0;
  if (!SubstituteLine(value, loc.line, col_offset, loc.file, lookup, &out, errors, used)) {
    return std::nullopt;
  }
  return out;
}

}  // namespace turnpike::config
