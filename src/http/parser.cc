#include "http/parser.h"

#include <cstring>

#include "base/strings.h"

namespace turnpike::http {
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

// llhttp keeps trailing spaces and tabs of header values; field values exclude them.
void TrimTrailingWhitespace(std::vector<Header>* headers) {
  for (Header& h : *headers) {
    while (!h.value.empty() && (h.value.back() == ' ' || h.value.back() == '\t')) {
      h.value.remove_suffix(1);
    }
  }
}

// The version at the end of the request line, when it is well formed ("HTTP/d.d").
bool HasWellFormedVersion(const char* data, size_t len) {
  std::string_view line(data, len);
  size_t end = line.find_first_of("\r\n");
  if (end != std::string_view::npos) line = line.substr(0, end);
  if (line.size() < 9) return false;
  std::string_view v = line.substr(line.size() - 8);
  return v.substr(0, 5) == "HTTP/" && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
         v[7] >= '0' && v[7] <= '9' && line[line.size() - 9] == ' ';
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

template <typename Head>
void ScanHeaders(Head* head) {
  for (const Header& h : head->headers) {
    if (h.name.size() == 10 && base::EqualsIgnoreCase(h.name, "connection")) {
      CollectConnectionTokens(h.value, head);
    }
  }
}

Framing FramingOf(const llhttp_t& p) {
  if (p.flags & F_CHUNKED) return Framing::kChunked;
  if (p.flags & F_CONTENT_LENGTH) return p.content_length > 0 ? Framing::kContentLength
                                                              : Framing::kNone;
  return Framing::kNone;
}

}  // namespace

size_t FindHeadEnd(std::string_view data, size_t* scan_pos) {
  size_t i = *scan_pos;
  // Resume a little before the previous end so a terminator split across reads is seen.
  i = i >= 3 ? i - 3 : 0;
  while (i < data.size()) {
    const void* nl = std::memchr(data.data() + i, '\n', data.size() - i);
    if (nl == nullptr) break;
    size_t pos = static_cast<const char*>(nl) - data.data();
    // "\n\n" or "\n\r\n" ends the head.
    if (pos + 1 < data.size() && data[pos + 1] == '\n') return pos + 2;
    if (pos + 2 < data.size() && data[pos + 1] == '\r' && data[pos + 2] == '\n') return pos + 3;
    i = pos + 1;
  }
  *scan_pos = data.size();
  return 0;
}

size_t FirstLineLength(std::string_view data) {
  size_t nl = data.find('\n');
  if (nl == std::string_view::npos) return data.size();
  return (nl > 0 && data[nl - 1] == '\r') ? nl - 1 : nl;
}

// ---------------------------------------------------------------- MessageParser

MessageParser::MessageParser(llhttp_type_t type, const llhttp_settings_t& settings)
    : settings_(settings) {
  settings_.on_header_field = &OnHeaderField;
  settings_.on_header_value = &OnHeaderValue;
  settings_.on_body = &OnBody;
  settings_.on_message_complete = &OnMessageComplete;
  llhttp_init(&parser_, type, &settings_);
  parser_.data = this;
}

int MessageParser::OnHeaderField(llhttp_t* p, const char* at, size_t len) {
  MessageParser* self = From(p);
  std::vector<Header>& headers = *self->headers_;
  if (self->in_value_ || headers.empty()) {
    headers.push_back(Header{});
    self->in_value_ = false;
  }
  return AppendSpan(&headers.back().name, at, len) ? 0 : -1;
}

int MessageParser::OnHeaderValue(llhttp_t* p, const char* at, size_t len) {
  MessageParser* self = From(p);
  self->in_value_ = true;
  return AppendSpan(&self->headers_->back().value, at, len) ? 0 : -1;
}

int MessageParser::OnBody(llhttp_t* p, const char* at, size_t len) {
  MessageParser* self = From(p);
  if (self->body_out_ != nullptr) AppendBody(self->body_out_, at, len);
  return 0;
}

int MessageParser::OnMessageComplete(llhttp_t* p) {
  From(p)->complete_ = true;
  return HPE_PAUSED;  // stop exactly at the end of this message
}

llhttp_errno_t MessageParser::ExecuteHead(const char* data, size_t len,
                                          std::vector<Header>* headers) {
  headers_ = headers;
  body_out_ = nullptr;
  complete_ = false;
  in_value_ = false;
  llhttp_errno_t err = llhttp_execute(&parser_, data, len);
  if (err == HPE_PAUSED_UPGRADE) err = HPE_OK;  // upgrades are not offered: plain message
  if (err == HPE_PAUSED) {
    // Paused at message end: the head must have been consumed entirely.
    err = llhttp_get_error_pos(&parser_) == data + len ? HPE_OK : HPE_USER;
  }
  if (err == HPE_OK) TrimTrailingWhitespace(headers);
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

// ---------------------------------------------------------------- RequestParser

namespace {
llhttp_settings_t RequestSettings(llhttp_data_cb on_url, llhttp_cb on_headers_complete) {
  llhttp_settings_t s;
  llhttp_settings_init(&s);
  s.on_url = on_url;
  s.on_headers_complete = on_headers_complete;
  return s;
}
llhttp_settings_t ResponseSettings(llhttp_data_cb on_status, llhttp_cb on_headers_complete) {
  llhttp_settings_t s;
  llhttp_settings_init(&s);
  s.on_status = on_status;
  s.on_headers_complete = on_headers_complete;
  return s;
}
}  // namespace

RequestParser::RequestParser()
    : MessageParser(HTTP_REQUEST, RequestSettings(&OnUrl, &OnHeadersComplete)) {}

int RequestParser::OnUrl(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<RequestParser*>(From(p));
  return AppendSpan(&self->head_->target, at, len) ? 0 : -1;
}

int RequestParser::OnHeadersComplete(llhttp_t* p) {
  auto* self = static_cast<RequestParser*>(From(p));
  RequestHead* h = self->head_;
  h->version_minor = p->http_minor;
  h->framing = FramingOf(*p);
  h->content_length = h->framing == Framing::kContentLength ? p->content_length : 0;
  h->keep_alive = llhttp_should_keep_alive(p) != 0;
  return 0;
}

int RequestParser::ParseHead(const char* data, size_t len, RequestHead* head) {
  // Every head arrives whole, so each starts from a clean parser (this also forgets an
  // Upgrade the previous request asked for and did not get).
  llhttp_reset(&parser_);
  head->Clear();
  head_ = head;
  llhttp_errno_t err = ExecuteHead(data, len, &head->headers);
  if (err != HPE_OK) {
    return err == HPE_INVALID_VERSION && HasWellFormedVersion(data, len) ? 505 : 400;
  }
  if (head->target.empty()) return 400;
  if (parser_.http_major != 1) return 505;
  if (!complete_ && !(parser_.flags & (F_CHUNKED | F_CONTENT_LENGTH))) {
    return 400;  // not a whole head
  }
  head->method_name = llhttp_method_name(static_cast<llhttp_method_t>(parser_.method));
  head->method = base::ParseMethod(head->method_name);
  std::string_view target = head->target;
  if (target[0] != '/') {
    // absolute-form: scheme://authority/path
    size_t scheme_end = target.find("://");
    if (scheme_end == std::string_view::npos) {
      if (target != "*") return 400;
    } else {
      std::string_view rest = target.substr(scheme_end + 3);
      size_t slash = rest.find_first_of("/?");
      head->host = rest.substr(0, slash);
      target = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
    }
  }
  size_t q = target.find('?');
  head->path = target.substr(0, q);
  head->query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (head->path.empty()) head->path = "/";
  int host_headers = 0;
  for (const Header& h : head->headers) {
    if (h.name.size() == 4 && base::EqualsIgnoreCase(h.name, "host")) {
      ++host_headers;
      if (head->host.empty()) head->host = h.value;
    } else if (h.name.size() == 6 && base::EqualsIgnoreCase(h.name, "expect")) {
      if (base::EqualsIgnoreCase(base::TrimWhitespace(h.value), "100-continue")) {
        head->expect_continue = head->version_minor >= 1;
      }
    }
  }
  if (host_headers > 1) return 400;
  if (host_headers == 0 && head->version_minor >= 1) return 400;  // RFC 9112 §3.2
  ScanHeaders(head);
  return 0;
}

// ---------------------------------------------------------------- ResponseParser

ResponseParser::ResponseParser()
    : MessageParser(HTTP_RESPONSE, ResponseSettings(&OnStatus, &OnHeadersComplete)) {}

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
    return 1;  // no body, whatever the headers say
  }
  h->framing = FramingOf(*p);
  if (h->framing == Framing::kContentLength) h->content_length = p->content_length;
  if (h->framing == Framing::kNone && !(p->flags & F_CONTENT_LENGTH)) {
    h->framing = Framing::kUntilClose;
    h->keep_alive = false;
  }
  return 0;
}

bool ResponseParser::ParseHead(const char* data, size_t len, ResponseHead* head) {
  if (llhttp_get_errno(&parser_) == HPE_PAUSED) llhttp_resume(&parser_);
  head->Clear();
  head_ = head;
  if (ExecuteHead(data, len, &head->headers) != HPE_OK) return false;
  if (parser_.http_major != 1) return false;
  ScanHeaders(head);
  return true;
}

bool ResponseParser::FinishAtEof() {
  if (complete_) return true;
  llhttp_errno_t err = llhttp_finish(&parser_);
  return (err == HPE_OK || err == HPE_PAUSED) && complete_;
}

}  // namespace turnpike::http
