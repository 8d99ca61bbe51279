#include "support/json.h"

#include <cctype>
#include <cstdlib>

namespace turnpike::testing {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::optional<JsonValue> Document() {
    JsonValue v;
    SkipSpace();
    if (!Value(&v, 0)) return std::nullopt;
    SkipSpace();
    if (pos_ != text_.size()) {
      Fail("trailing characters");
      return std::nullopt;
    }
    return v;
  }

  std::string error;

 private:
  bool Fail(const std::string& what) {
    if (error.empty()) error = what + " at offset " + std::to_string(pos_);
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool Value(JsonValue* v, int depth) {
    if (depth > 64) return Fail("nesting too deep");
    if (pos_ >= text_.size()) return Fail("unexpected end");
    char c = text_[pos_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->type = JsonValue::Type::kString;
      return String(&v->string);
    }
    if (Literal("true")) {
      v->type = JsonValue::Type::kBool;
      v->boolean = true;
      return true;
    }
    if (Literal("false")) {
      v->type = JsonValue::Type::kBool;
      return true;
    }
    if (Literal("null")) return true;
    return Number(v);
  }

  bool Number(JsonValue* v) {
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
            text_[pos_] == 'e' || text_[pos_] == 'E' || text_[pos_] == '+' || text_[pos_] == '-')) {
      ++pos_;
    }
    std::string digits(text_.substr(start, pos_ - start));
    char* end = nullptr;
    v->number = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size()) {
      pos_ = start;
      return Fail("bad value");
    }
    v->type = JsonValue::Type::kNumber;
    return true;
  }

  static int HexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  void AppendUtf8(std::string* out, unsigned cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool Hex4(unsigned* cp) {
    if (pos_ + 4 > text_.size()) return false;
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      int d = HexDigit(text_[pos_++]);
      if (d < 0) return false;
      *cp = *cp * 16 + static_cast<unsigned>(d);
    }
    return true;
  }

  bool String(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control char");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(e);
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          unsigned cp;
          if (!Hex4(&cp)) return Fail("bad \\u escape");
          if (cp < 0x100) {
            out->push_back(static_cast<char>(cp));  // raw byte, see header
          } else if (cp >= 0xd800 && cp < 0xdc00) {
            unsigned lo;
            if (!Literal("\\u") || !Hex4(&lo) || lo < 0xdc00 || lo > 0xdfff) {
              return Fail("bad surrogate pair");
            }
            AppendUtf8(out, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
          } else {
            AppendUtf8(out, cp);
          }
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }

  bool Array(JsonValue* v, int depth) {
    v->type = JsonValue::Type::kArray;
    ++pos_;
    SkipSpace();
    if (Literal("]")) return true;
    while (true) {
      JsonValue item;
      SkipSpace();
      if (!Value(&item, depth + 1)) return false;
      v->array.push_back(std::move(item));
      SkipSpace();
      if (Literal("]")) return true;
      if (!Literal(",")) return Fail("expected , or ]");
    }
  }

  bool Object(JsonValue* v, int depth) {
    v->type = JsonValue::Type::kObject;
    ++pos_;
    SkipSpace();
    if (Literal("}")) return true;
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ >= text_.size() || text_[pos_] != '"' || !String(&key)) {
        return Fail("expected key");
      }
      SkipSpace();
      if (!Literal(":")) return Fail("expected :");
      SkipSpace();
      JsonValue item;
      if (!Value(&item, depth + 1)) return false;
      v->object.emplace_back(std::move(key), std::move(item));
      SkipSpace();
      if (Literal("}")) return true;
      if (!Literal(",")) return Fail("expected , or }");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue::JsonValue() = default;

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<JsonValue> ParseJson(std::string_view text, std::string* error) {
  Parser parser(text);
  std::optional<JsonValue> v = parser.Document();
  if (!v && error) *error = parser.error;
  return v;
}

}  // namespace turnpike::testing
