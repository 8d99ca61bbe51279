#include "http/response_encoder.h"

#include "base/strings.h"

namespace turnpike::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";

void AppendStatusLine(std::string* out, int status, std::string_view reason) {
  out->append("HTTP/1.1 ");
  base::AppendDecimal(out, static_cast<uint64_t>(status));
  out->push_back(' ');
  out->append(reason.empty() ? ReasonPhrase(status) : reason);
  out->append(kCrlf);
}

// Plugins' headers, upstream statuses, framing, Connection and the blank line.
void AppendTail(const ResponseHeadOptions& o, std::string* out) {
  if (o.edits != nullptr) {
    o.edits->ForEachSet([&](std::string_view name, std::string_view value) {
      out->append(name);
      out->append(": ");
      out->append(value);
      out->append(kCrlf);
    });
  }
  if (!o.upstream_statuses.empty()) {
    out->append("X-APISIX-Upstream-Status: ");
    for (size_t i = 0; i < o.upstream_statuses.size(); ++i) {
      if (i > 0) out->append(", ");
      base::AppendDecimal(out, o.upstream_statuses[i]);
    }
    out->append(kCrlf);
  }
  switch (o.framing) {
    case BodyFraming::kContentLength:
      out->append("Content-Length: ");
      base::AppendDecimal(out, o.content_length);
      out->append(kCrlf);
      break;
    case BodyFraming::kChunked:
      out->append("Transfer-Encoding: chunked\r\n");
      break;
    case BodyFraming::kNoBody:
    case BodyFraming::kUntilClose:
      break;
  }
  if (!o.upgrade.empty()) {
    out->append("Upgrade: ");
    out->append(o.upgrade);
    out->append("\r\nConnection: upgrade\r\n");
  } else if (!o.keep_alive) {
    out->append("Connection: close\r\n");
  } else if (o.http10_client) {
    out->append("Connection: keep-alive\r\n");
  }
  out->append(kCrlf);
}

}  // namespace

void EncodeProxiedResponseHead(const ResponseHead& node, const ResponseHeadOptions& o,
                               std::string* out) {
  out->clear();
  AppendStatusLine(out, o.status, o.reason);
  out->append(o.server_line);
  bool has_body = o.framing != BodyFraming::kNoBody;
  bool edited = o.edits != nullptr && !o.edits->empty();
  for (const Header& h : node.headers) {
    std::string_view n = h.name;
    if (IsHopByHop(n) || IsListedIn(n, node.connection_tokens, node.connection_token_count)) {
      continue;
    }
    if (base::EqualsIgnoreCase(n, "server")) continue;
    if (has_body && base::EqualsIgnoreCase(n, "content-length")) continue;  // re-stated
    if (edited && o.edits->Touches(n)) continue;  // a plugin set or removed it
    out->append(n);
    out->append(": ");
    out->append(h.value);
    out->append(kCrlf);
  }
  AppendTail(o, out);
}

void EncodeLocalResponseHead(const ResponseHeadOptions& o, std::string_view date,
                             std::string_view content_type, std::string* out) {
  out->clear();
  AppendStatusLine(out, o.status, o.reason);
  out->append("Date: ");
  out->append(date);
  out->append(kCrlf);
  if (o.edits == nullptr || !o.edits->Touches("content-type")) {
    out->append("Content-Type: ");
    out->append(content_type);
    out->append(kCrlf);
  }
  out->append(o.server_line);
  AppendTail(o, out);
}

}  // namespace turnpike::http
