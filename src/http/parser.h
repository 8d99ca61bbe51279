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
#include <cstdint>
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

// Whether this CPU has the instructions llhttp was compiled for (SSE4.2 when the build machine
// had it, cmake/llhttp.cmake). False, with `why` set, when it lacks them: the daemon refuses to
// start rather than die on an illegal instruction at the first request.
bool CpuCanRunParser(const char** why);

struct BodyChunk {
  size_t consumed = 0;    // bytes of input used (the rest belongs to the next message)
  bool complete = false;  // the message ended inside this input
  bool error = false;     // malformed framing; the connection must be closed
};

// What request and response parsing share: the llhttp state, header and body collection,
// and stopping exactly at the end of each message.
class MessageParser {
 public:
  MessageParser(const MessageParser&) = delete;
  MessageParser& operator=(const MessageParser&) = delete;

  // Decodes body bytes (de-chunked) into `out` (appended views into `data`).
  BodyChunk FeedBody(const char* data, size_t len, std::vector<std::string_view>* out);

  bool message_complete() const { return complete_; }

 protected:
  // `settings` (from MakeSettings) must outlive the parser.
  MessageParser(llhttp_type_t type, const llhttp_settings_t* settings);
  // llhttp callbacks: the shared ones for headers, body and message end, and the given ones
  // specific to a message type.
  static llhttp_settings_t MakeSettings(llhttp_cb on_headers_complete, llhttp_data_cb on_status);
  ~MessageParser() = default;

  // Runs llhttp over `prefix` and then one complete head of `len` bytes, collecting headers
  // into `headers`. Returns HPE_OK only when llhttp's end of the head is exactly `data + len`
  // (the end FindHeadEnd found: llhttp ending it earlier or later is HPE_USER); a message
  // without a body is then complete. Other llhttp errors are returned as they are.
  llhttp_errno_t ExecuteHead(std::string_view prefix, const char* data, size_t len,
                             std::vector<Header>* headers);

  // The subclass's on_headers_complete ends with this: it pauses llhttp at the end of the
  // head so ExecuteHead can check where that is.
  int HeadComplete();

  static MessageParser* From(llhttp_t* p) { return static_cast<MessageParser*>(p->data); }

  llhttp_t parser_;
  bool complete_ = false;

 private:
  static int OnHeaderField(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int OnBody(llhttp_t* p, const char* at, size_t len);
  static int OnChunkHeader(llhttp_t* p);
  static int OnMessageComplete(llhttp_t* p);

  // The largest chunk size accepted (nginx: what fits in off_t); larger is malformed framing.
  static constexpr uint64_t kMaxChunkSize = INT64_MAX;

  std::vector<Header>* headers_ = nullptr;
  std::vector<std::string_view>* body_out_ = nullptr;
  bool in_value_ = false;
  bool head_complete_ = false;
};

class RequestParser : public MessageParser {
 public:
  RequestParser();

  // Parses one complete head (as found by FindHeadEnd; empty lines before the request line
  // are skipped). Returns 0 on success, else the status to answer: 400 for anything
  // malformed or ambiguous (request line, target, Host, field names, framing), 501 for a
  // transfer coding other than chunked, 505 for an HTTP major version other than 1.
  // On success `head` views point into `data`; a fragment is not part of head->target. If the
  // request has no body the message is complete already (message_complete() is true).
  int ParseHead(const char* data, size_t len, RequestHead* head);

 private:
  static int OnHeadersComplete(llhttp_t* p);
  static const llhttp_settings_t* Settings();
  RequestHead* head_ = nullptr;
};

class ResponseParser : public MessageParser {
 public:
  ResponseParser();

  // Starts a new response. `head_request`: the request was HEAD, so no body follows whatever
  // the headers say.
  void Reset(bool head_request);

  // Parses one complete head. Returns false when malformed. 1xx heads are complete messages
  // of their own: call Reset() again and parse the next head.
  bool ParseHead(const char* data, size_t len, ResponseHead* head);

  // The peer closed the connection: completes an until-close body. Returns true when the
  // message is complete (false: truncated).
  bool FinishAtEof();

 private:
  static int OnStatus(llhttp_t* p, const char* at, size_t len);
  static int OnHeadersComplete(llhttp_t* p);
  static const llhttp_settings_t* Settings();
  ResponseHead* head_ = nullptr;
  bool head_request_ = false;
};

}  // namespace turnpike::http
