// HeaderLines: writes the header lines of a parsed head that a message forwards unchanged.
// A line the parser saw as exactly "name: value\r\n" (Header::plain_line) is copied as it
// arrived, and consecutive such lines in one piece; any other is written out as
// "name: value\r\n". For the encoders of this module. Not thread-safe; one per encoding.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/string_writer.h"
#include "http/message.h"

namespace turnpike::http {

class HeaderLines {
 public:
  explicit HeaderLines(base::StringWriter& w) : w_(w) {}
  HeaderLines(const HeaderLines&) = delete;
  HeaderLines& operator=(const HeaderLines&) = delete;
  ~HeaderLines() { Flush(); }

  void Add(const Header& h) {
    if (h.plain_line) {
      if (h.name.data() != end_) {
        Flush();
        begin_ = h.name.data();
      }
      end_ = h.value.data() + h.value.size() + 2;
      return;
    }
    Flush();
    w_.Append(h.name);
    w_.Append(": ");
    w_.Append(h.value);
    w_.Append("\r\n");
  }
  // Writes the lines not written yet; call before writing anything else.
  void Flush() {
    if (begin_ != end_) w_.Append(std::string_view(begin_, static_cast<size_t>(end_ - begin_)));
    begin_ = end_ = nullptr;
  }

 private:
  base::StringWriter& w_;
  const char* begin_ = nullptr;  // [begin_, end_): plain lines not copied yet
  const char* end_ = nullptr;
};

}  // namespace turnpike::http
