#include "http/parser.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/strings.h"
#include "http/request_line.h"

namespace turnpike::http {

bool CpuCanRunParser(const char** why) {
#if defined(TURNPIKE_LLHTTP_SSE42)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) {
    *why = "this build's HTTP parser (llhttp) needs SSE4.2, which this CPU lacks; "
           "build with -DTURNPIKE_LLHTTP_SSE42=OFF";
    return false;
  }
#endif
  *why = nullptr;
  return true;
}

namespace {

// Appends a span, merging it with the previous one when llhttp split a contiguous token.
// Returns false when the pieces are not contiguous: with a whole head that only happens for a
// header value folded over several lines (obs-fold), which RFC 9112 §5.2 lets us reject.
bool AppendSpan(std::string_view* dst, const char* at, size_t len) {
  if (dst->empty()) {
    *dst = std::string_view(at, len);
  } else if (dst->data() + dst->size() == at) {
    *dst = std::string_view(dst->data(), dst->size() + len);
  } else {
    return false;
  }
  return true;
}

// What every parsed head's fields need once: llhttp keeps trailing spaces and tabs of header
// values, which field values exclude; each name is classified (HeaderId); and a field that
// arrived as exactly "name: value\r\n" is marked as such. False for an obs-fold that
// continues an empty value: llhttp 8 reads a line that starts with whitespace after an empty
// value as that value (one contiguous span, so AppendSpan cannot see it), and obs-folds are
// refused (RFC 9112 §5.2). A value starts on its name's line, after the colon and optional
// whitespace; an empty one is reported as an empty span at the start of the next line.
bool FinishHeaders(std::vector<Header>* headers) {
  for (Header& h : *headers) {
    while (!h.value.empty() && (h.value.back() == ' ' || h.value.back() == '\t')) {
      h.value.remove_suffix(1);
    }
    h.id = ClassifyHeaderName(h.name);
    if (h.name.empty()) continue;  // refused by the field checks (ScanFields)
    // Every line of a whole head ends with CRLF, and a field with a value has its value's
    // view in the same buffer after the name's.
    const char* colon = h.name.data() + h.name.size();
    const bool tight = h.value.data() == colon + 2 && colon[1] == ' ';
    if (!tight && !h.value.empty()) {
      if (h.value.data() <= colon) return false;
      for (const char* q = colon + 1; q < h.value.data(); ++q) {
        if (*q != ' ' && *q != '\t') return false;
      }
    }
    h.plain_line = tight && !h.value.empty() && colon[0] == ':' &&
                   h.value.data()[h.value.size()] == '\r' &&
                   h.value.data()[h.value.size() + 1] == '\n';
  }
  return true;
}

void AppendBody(std::vector<std::string_view>* out, const char* at, size_t len) {
  if (!out->empty() && out->back().data() + out->back().size() == at) {
    out->back() = std::string_view(out->back().data(), out->back().size() + len);
  } else {
    out->emplace_back(at, len);
  }
}

// Splits a Connection header value into its comma-separated tokens.
template <typename Head>
void CollectConnectionTokens(std::string_view value, Head* head) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view token = base::TrimWhitespace(value.substr(0, comma));
    if (!token.empty() && head->connection_token_count < 8) {
      head->connection_tokens[head->connection_token_count++] = token;
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

Framing FramingOf(const llhttp_t& p) {
  if (p.flags & F_CHUNKED) return Framing::kChunked;
  if (p.flags & F_CONTENT_LENGTH)
    return p.content_length > 0 ? Framing::kContentLength : Framing::kNone;
  return Framing::kNone;
}

}  // namespace

namespace {

// The head ends after "\n\n" or "\n\r\n": the length up to there when the LF at `pos` starts
// one, else 0.
inline size_t EndAfterLf(const char* p, size_t n, size_t pos) {
  if (pos + 1 < n && p[pos + 1] == '\n') return pos + 2;
  if (pos + 2 < n && p[pos + 1] == '\r' && p[pos + 2] == '\n') return pos + 3;
  return 0;
}

}  // namespace

size_t FindHeadEnd(std::string_view data, size_t* scan_pos) {
  const char* p = data.data();
  const size_t n = data.size();
  // Resume a little before the previous end so a terminator split across reads is seen.
  size_t i = *scan_pos >= 3 ? *scan_pos - 3 : 0;
#if defined(__SSE2__)
  // Sixteen bytes at a time, then each LF of the block (a line is ~20 bytes, so about one):
  // a memchr call per line cost more than the scan itself.
  const __m128i lf = _mm_set1_epi8('\n');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    for (unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf))); m != 0;
         m &= m - 1) {
      if (size_t end = EndAfterLf(p, n, i + static_cast<size_t>(__builtin_ctz(m)))) return end;
    }
  }
  if (i < n && n >= 16) {
    // The last bytes as the last sixteen, without the LFs already seen.
    const size_t at = n - 16;
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
    unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf)));
    for (m &= ~0u << (i - at); m != 0; m &= m - 1) {
      if (size_t end = EndAfterLf(p, n, at + static_cast<size_t>(__builtin_ctz(m)))) return end;
    }
    i = n;
  }
#endif
  while (i < n) {
    const void* nl = std::memchr(p + i, '\n', n - i);
    if (nl == nullptr) break;
    size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - p);
    if (size_t end = EndAfterLf(p, n, pos)) return end;
    i = pos + 1;
  }
  *scan_pos = n;
  return 0;
}

size_t FirstLineLength(std::string_view data) {
  size_t nl = data.find('\n');
  if (nl == std::string_view::npos) return data.size();
  return (nl > 0 && data[nl - 1] == '\r') ? nl - 1 : nl;
}

// ---------------------------------------------------------------- MessageParser

MessageParser::MessageParser(llhttp_type_t type, const llhttp_settings_t* settings) {
  llhttp_init(&parser_, type, settings);
  parser_.data = this;
}

llhttp_settings_t MessageParser::MakeSettings(llhttp_cb on_headers_complete,
                                              llhttp_data_cb on_status) {
  llhttp_settings_t s;
  llhttp_settings_init(&s);
  s.on_header_field = &OnHeaderField;
  s.on_header_value = &OnHeaderValue;
  s.on_body = &OnBody;
  s.on_message_complete = &OnMessageComplete;
  s.on_chunk_header = &OnChunkHeader;
  s.on_headers_complete = on_headers_complete;
  s.on_status = on_status;
  return s;
}

int MessageParser::OnHeaderField(llhttp_t* p, const char* at, size_t len) {
  MessageParser* self = From(p);
  if (self->headers_ == nullptr) return 0;  // a trailer field: not forwarded, not kept
  std::vector<Header>& headers = *self->headers_;
  if (self->in_value_ || headers.empty()) {
    // A new field (with a whole head, llhttp reports each name in one piece).
    headers.emplace_back().name = std::string_view(at, len);
    self->in_value_ = false;
    return 0;
  }
  return AppendSpan(&headers.back().name, at, len) ? 0 : -1;
}

int MessageParser::OnHeaderValue(llhttp_t* p, const char* at, size_t len) {
  MessageParser* self = From(p);
  if (self->headers_ == nullptr) return 0;
  self->in_value_ = true;
  return AppendSpan(&self->headers_->back().value, at, len) ? 0 : -1;
}

int MessageParser::OnBody(llhttp_t* p, const char* at, size_t len) {
  MessageParser* self = From(p);
  if (self->body_out_ != nullptr) AppendBody(self->body_out_, at, len);
  return 0;
}

int MessageParser::OnChunkHeader(llhttp_t* p) {
  // llhttp accepts any size that fits in 64 bits; nginx refuses what does not fit in off_t.
  return p->content_length > kMaxChunkSize ? -1 : 0;
}

int MessageParser::OnMessageComplete(llhttp_t* p) {
  From(p)->complete_ = true;
  return HPE_PAUSED;  // stop exactly at the end of this message
}

int MessageParser::HeadComplete() {
  head_complete_ = true;
  return HPE_PAUSED;  // ExecuteHead checks where llhttp thinks the head ended
}

llhttp_errno_t MessageParser::ExecuteHead(std::string_view prefix, const char* data, size_t len,
                                          std::vector<Header>* headers) {
  headers_ = headers;
  body_out_ = nullptr;
  complete_ = false;
  head_complete_ = false;
  in_value_ = false;
  llhttp_errno_t err = HPE_OK;
  if (!prefix.empty()) err = llhttp_execute(&parser_, prefix.data(), prefix.size());
  if (err == HPE_OK) err = llhttp_execute(&parser_, data, len);
  headers_ = nullptr;  // whatever follows the head (trailers) is not a header
  if (err != HPE_PAUSED || !head_complete_) {
    // HPE_OK: llhttp wants more head than FindHeadEnd found, so the two disagree on where
    // the head ends; that is how requests are smuggled. Refuse it like any parse error.
    return err == HPE_OK || err == HPE_PAUSED ? HPE_USER : err;
  }
  if (llhttp_get_error_pos(&parser_) != data + len) return HPE_USER;  // llhttp's head is shorter
  // Let llhttp decide about the body: a message without one completes here.
  llhttp_resume(&parser_);
  err = llhttp_execute(&parser_, data + len, 0);
  if (err == HPE_PAUSED_UPGRADE) {
    // Upgrades are not offered: the message is a plain one without a body.
    llhttp_resume_after_upgrade(&parser_);
    complete_ = true;
    err = HPE_OK;
  }
  if (err == HPE_PAUSED) err = complete_ ? HPE_OK : HPE_USER;
  if (err == HPE_OK && !FinishHeaders(headers)) err = HPE_USER;
  return err;
}

BodyChunk MessageParser::FeedBody(const char* data, size_t len,
                                  std::vector<std::string_view>* out) {
  BodyChunk r;
  if (complete_) {
    r.complete = true;
    return r;
  }
  body_out_ = out;
  llhttp_errno_t err = llhttp_execute(&parser_, data, len);
  body_out_ = nullptr;
  if (err == HPE_OK) {
    r.consumed = len;
  } else if (err == HPE_PAUSED) {
    r.consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - data);
  } else {
    r.error = true;
  }
  r.complete = complete_;
  return r;
}

// ---------------------------------------------------------------- shared field rules

namespace {

enum class FieldCheck { kOk, kBad, kUnsupportedCoding };

// llhttp's strict mode still takes a bare LF as the empty line that ends a head; Turnpike
// wants CRLF there as everywhere else.
bool EndsWithBlankCrlfLine(std::string_view head) {
  return head.size() >= 2 && head.substr(head.size() - 2) == "\r\n" &&
         (head.size() == 2 || head.substr(head.size() - 4) == "\r\n\r\n");
}

// llhttp's strict mode still takes a bare LF after the status line (and skips empty lines
// before it), so a response head is checked line by line.
bool EveryLfAfterCr(std::string_view head) {
  const char* p = head.data();
  const size_t n = head.size();
  if (n != 0 && p[0] == '\n') return false;
  size_t i = 1;  // each LF at i is checked against the byte at i - 1
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n');
  const __m128i cr = _mm_set1_epi8('\r');
  for (; i + 16 <= n; i += 16) {
    const __m128i at = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i before = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i - 1));
    const __m128i bare = _mm_andnot_si128(_mm_cmpeq_epi8(before, cr), _mm_cmpeq_epi8(at, lf));
    if (_mm_movemask_epi8(bare) != 0) return false;
  }
#endif
  for (; i < n; ++i) {
    if (p[i] == '\n' && p[i - 1] != '\r') return false;
  }
  return true;
}

int CountFields(const std::vector<Header>& headers, std::string_view lower_name) {
  int n = 0;
  for (const Header& h : headers) n += base::EqualsIgnoreCase(h.name, lower_name) ? 1 : 0;
  return n;
}

// One pass over a parsed head's fields (FinishHeaders classified them): the RFC 9112 rules
// llhttp leaves to its user, the Connection header's tokens into `head`, and `more(h)` for
// every other field (the request's Host and Expect). The rules: no empty field name, at most
// one Transfer-Encoding line and only the `chunked` coding (Turnpike decodes and re-chunks
// bodies, so a coding it would drop must not pass), and no Transfer-Encoding in HTTP/1.0
// (§6.1: faulty framing). The verdict is the first broken rule's, in field order.
template <typename Head, typename More>
FieldCheck ScanFields(Head* head, int version_minor, More&& more) {
  FieldCheck verdict = FieldCheck::kOk;
  int transfer_encodings = 0;
  for (const Header& h : head->headers) {
    switch (h.id) {
      case HeaderId::kTransferEncoding:
        if (verdict != FieldCheck::kOk) break;
        if (++transfer_encodings > 1 || version_minor == 0) {
          verdict = FieldCheck::kBad;
        } else if (!base::EqualsIgnoreCase(base::TrimWhitespace(h.value), "chunked")) {
          verdict = FieldCheck::kUnsupportedCoding;
        }
        break;
      case HeaderId::kConnection:
        CollectConnectionTokens(h.value, head);
        break;
      default:
        if (h.name.empty() && verdict == FieldCheck::kOk) verdict = FieldCheck::kBad;
        more(h);
        break;
    }
  }
  return verdict;
}

}  // namespace

// ---------------------------------------------------------------- RequestParser

// One settings table per message type, shared by every parser (llhttp keeps a pointer).
const llhttp_settings_t* RequestParser::Settings() {
  static const llhttp_settings_t settings = MakeSettings(&OnHeadersComplete, nullptr);
  return &settings;
}

RequestParser::RequestParser() : MessageParser(HTTP_REQUEST, Settings()) {}

int RequestParser::OnHeadersComplete(llhttp_t* p) {
  auto* self = static_cast<RequestParser*>(From(p));
  RequestHead* h = self->head_;
  h->framing = FramingOf(*p);
  h->content_length = h->framing == Framing::kContentLength ? p->content_length : 0;
  h->keep_alive = llhttp_should_keep_alive(p) != 0;
  return self->HeadComplete();
}

int RequestParser::ParseHead(const char* data, size_t len, RequestHead* head) {
  // Every head arrives whole, so each starts from a clean parser (this also forgets an
  // Upgrade the previous request asked for and did not get).
  llhttp_reset(&parser_);
  head->Clear();
  head_ = head;
  std::string_view text(data, len);
  // RFC 9112 §2.2: empty lines before the request line are ignored.
  while (text.size() >= 2 && text[0] == '\r' && text[1] == '\n') text.remove_prefix(2);
  RequestLine line;
  if (int status = ParseRequestLine(text, &line); status != 0) return status;
  // llhttp parses the fields and the framing after a request line of its own: one it knows,
  // with the version of the real one (keep-alive rules depend on it).
  std::string_view llhttp_line = line.minor == 0 ? "GET / HTTP/1.0\r\n" : "GET / HTTP/1.1\r\n";
  text.remove_prefix(line.length);
  if (!EndsWithBlankCrlfLine(text)) return 400;
  llhttp_errno_t err = ExecuteHead(llhttp_line, text.data(), text.size(), &head->headers);
  if (err == HPE_INVALID_TRANSFER_ENCODING) {
    // A coding after chunked (501, as nginx), or a second Transfer-Encoding line (400).
    return CountFields(head->headers, "transfer-encoding") > 1 ? 400 : 501;
  }
  if (err != HPE_OK) return 400;
  if (!complete_ && !(parser_.flags & (F_CHUNKED | F_CONTENT_LENGTH))) {
    return 400;  // not a whole head
  }
  head->version_minor = static_cast<uint8_t>(line.minor);
  int host_headers = 0;
  bool bad_host = false;
  std::string_view first_host;
  FieldCheck fields = ScanFields(head, line.minor, [&](const Header& h) {
    if (h.id == HeaderId::kHost) {
      if (host_headers++ == 0) first_host = h.value;
      bad_host = bad_host || !IsValidHost(h.value);
    } else if (h.id == HeaderId::kExpect) {
      if (base::EqualsIgnoreCase(base::TrimWhitespace(h.value), "100-continue")) {
        head->expect_continue = head->version_minor >= 1;
      }
    }
  });
  switch (fields) {
    case FieldCheck::kOk:
      break;
    case FieldCheck::kBad:
      return 400;
    case FieldCheck::kUnsupportedCoding:
      return 501;  // nginx: "unknown Transfer-Encoding"
  }
  head->method_name = line.method;
  head->method = base::ParseMethod(line.method);
  RequestTarget target;
  if (!SplitRequestTarget(line.target, &target)) return 400;
  if (target.path == "*" && head->method != base::Method::kOptions) return 400;
  head->target = target.without_fragment;
  head->path = target.path;
  head->query = target.query;
  head->host = target.authority.empty() ? first_host : target.authority;
  if (bad_host || host_headers > 1) return 400;
  if (host_headers == 0 && head->version_minor >= 1) return 400;  // RFC 9112 §3.2
  return 0;
}

// ---------------------------------------------------------------- ResponseParser

ResponseParser::ResponseParser() : MessageParser(HTTP_RESPONSE, Settings()) {}

const llhttp_settings_t* ResponseParser::Settings() {
  static const llhttp_settings_t settings = MakeSettings(&OnHeadersComplete, &OnStatus);
  return &settings;
}

void ResponseParser::Reset(bool head_request) {
  llhttp_reset(&parser_);
  head_request_ = head_request;
  complete_ = false;
}

int ResponseParser::OnStatus(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<ResponseParser*>(From(p));
  return AppendSpan(&self->head_->reason, at, len) ? 0 : -1;
}

int ResponseParser::OnHeadersComplete(llhttp_t* p) {
  auto* self = static_cast<ResponseParser*>(From(p));
  ResponseHead* h = self->head_;
  h->status = p->status_code;
  if (h->status < 100 || h->status > 599) return -1;  // status codes have three digits
  h->version_minor = p->http_minor;
  h->keep_alive = llhttp_should_keep_alive(p) != 0;
  if (ResponseHasNoBody(h->status, self->head_request_)) {
    h->framing = Framing::kNone;
    h->content_length = 0;
    // llhttp's keep-alive answer assumed a close-delimited body; there is none.
    h->keep_alive = !(p->flags & F_CONNECTION_CLOSE) &&
                    (p->http_minor >= 1 || (p->flags & F_CONNECTION_KEEP_ALIVE));
    p->flags |= F_SKIPBODY;  // what returning 1 does; the pause below needs the return value
    return self->HeadComplete();
  }
  h->framing = FramingOf(*p);
  if (h->framing == Framing::kContentLength) h->content_length = p->content_length;
  if (h->framing == Framing::kNone && !(p->flags & F_CONTENT_LENGTH)) {
    h->framing = Framing::kUntilClose;
    h->keep_alive = false;
  }
  return self->HeadComplete();
}

bool ResponseParser::ParseHead(const char* data, size_t len, ResponseHead* head) {
  if (llhttp_get_errno(&parser_) == HPE_PAUSED) llhttp_resume(&parser_);
  head->Clear();
  head_ = head;
  if (!EveryLfAfterCr(std::string_view(data, len))) return false;
  if (ExecuteHead({}, data, len, &head->headers) != HPE_OK) return false;
  if (parser_.http_major != 1) return false;
  return ScanFields(head, head->version_minor, [](const Header&) {}) == FieldCheck::kOk;
}

bool ResponseParser::FinishAtEof() {
  if (complete_) return true;
  llhttp_errno_t err = llhttp_finish(&parser_);
  return (err == HPE_OK || err == HPE_PAUSED) && complete_;
}

}  // namespace turnpike::http
