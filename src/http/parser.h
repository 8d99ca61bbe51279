// llhttp glue: incremental HTTP/1.x parsing into RequestHead / ResponseHead with zero copies.
//
// Usage per message: find the end of the head with FindHeadEnd(), call ParseHead() with the
// complete head (so every header is one contiguous view into the caller's buffer), then
// FeedBody() with whatever follows until it reports completion. The parser stops exactly at
// the end of each message, so pipelined bytes after it stay with the caller.
// One parser per connection; owned by one worker thread.
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "http/message.h"

namespace turnpike::http {

// Scans `data` for the blank line that ends a message head, starting at *scan_pos (updated so
// a later call resumes where this one stopped). Returns the head length including the
// terminator, or 0 when it is not complete yet.
size_t FindHeadEnd(std::string_view data, size_t* scan_pos);

// Length of the first line (without its line ending), or `data.size()` when no line end yet.
size_t FirstLineLength(std::string_view data);

struct BodyChunk {
  size_t consumed = 0;     // bytes of input used (the rest belongs to the next message)
  bool complete = false;   // the message ended inside this input
  bool error = false;      // malformed framing; the connection must be closed
};

class RequestParser {
 public:
  RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Parses one complete head. Returns 0 on success, else the status to answer (400 or 505).
  // On success `head` views point into `data`. If the request has no body the message is
  // complete already (message_complete() is true).
  int ParseHead(const char* data, size_t len, RequestHead* head);

  // Decodes body bytes (de-chunked) into `out` (appended views into `data`).
  BodyChunk FeedBody(const char* data, size_t len, std::vector<std::string_view>* out);

  bool message_complete() const { return complete_; }

 private:
  static int OnUrl(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderField(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int OnHeadersComplete(llhttp_t* p);
  static int OnBody(llhttp_t* p, const char* at, size_t len);
  static int OnMessageComplete(llhttp_t* p);

  llhttp_t parser_;
  llhttp_settings_t settings_;
  RequestHead* head_ = nullptr;
  std::vector<std::string_view>* body_out_ = nullptr;
  bool complete_ = false;
  bool in_value_ = false;
};

class ResponseParser {
 public:
  ResponseParser();
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  // Starts a new response. `head_request`: the request was HEAD, so no body follows whatever
  // the headers say.
  void Reset(bool head_request);

  // Parses one complete head. Returns false when malformed. 1xx heads are complete messages
  // of their own: call Reset() again and parse the next head.
  bool ParseHead(const char* data, size_t len, ResponseHead* head);

  BodyChunk FeedBody(const char* data, size_t len, std::vector<std::string_view>* out);

  // The peer closed the connection: completes an until-close body. Returns true when the
  // message is complete (false: truncated).
  bool FinishAtEof();

  bool message_complete() const { return complete_; }

 private:
  static int OnStatus(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderField(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int OnHeadersComplete(llhttp_t* p);
  static int OnBody(llhttp_t* p, const char* at, size_t len);
  static int OnMessageComplete(llhttp_t* p);

  llhttp_t parser_;
  llhttp_settings_t settings_;
  ResponseHead* head_ = nullptr;
  std::vector<std::string_view>* body_out_ = nullptr;
  bool head_request_ = false;
  bool complete_ = false;
  bool in_value_ = false;
};

}  // namespace turnpike::http
