#include "http/response_encoder.h"

#include <cstring>

#include "base/string_writer.h"
#include "base/strings.h"
#include "http/header_lines.h"

namespace turnpike::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";

void AppendStatusLine(base::StringWriter& w, int status, std::string_view reason) {
  if (status >= 100 && status <= 999) {  // always, for what parsers and plugins allow
    char line[13];
    std::memcpy(line, "HTTP/1.1 ", 9);
    line[9] = static_cast<char>('0' + status / 100);
    line[10] = static_cast<char>('0' + status / 10 % 10);
    line[11] = static_cast<char>('0' + status % 10);
    line[12] = ' ';
    w.Append(std::string_view(line, sizeof(line)));
  } else {
    w.Append("HTTP/1.1 ");
    w.AppendDecimal(static_cast<uint64_t>(status));
    w.Push(' ');
  }
  w.Append(reason.empty() ? ReasonPhrase(status) : reason);
  w.Append(kCrlf);
}

// What a head with `headers` and the options' additions probably takes.
size_t ExpectedSize(const std::vector<Header>& headers, const ResponseHeadOptions& o) {
  size_t n = 192 + o.server_line.size();
  if (!headers.empty()) n += SpanOfViews(headers.front().name, headers.back().value);
  return n;
}

// Plugins' headers, upstream statuses, framing, Connection and the blank line.
void AppendTail(const ResponseHeadOptions& o, base::StringWriter& w) {
  if (o.edits != nullptr) {
    o.edits->ForEachSet([&](const HeaderEdit& e) { w.Append(e.line); });
  }
  if (!o.upstream_statuses.empty()) {
    w.Append("X-APISIX-Upstream-Status: ");
    for (size_t i = 0; i < o.upstream_statuses.size(); ++i) {
      if (i > 0) w.Append(", ");
      w.AppendDecimal(o.upstream_statuses[i]);
    }
    w.Append(kCrlf);
  }
  switch (o.framing) {
    case BodyFraming::kContentLength:
      w.Append("Content-Length: ");
      w.AppendDecimal(o.content_length);
      w.Append(kCrlf);
      break;
    case BodyFraming::kChunked:
      w.Append("Transfer-Encoding: chunked\r\n");
      break;
    case BodyFraming::kNoBody:
    case BodyFraming::kUntilClose:
      break;
  }
  if (!o.upgrade.empty()) {
    w.Append("Upgrade: ");
    w.Append(o.upgrade);
    w.Append("\r\nConnection: upgrade\r\n");
  } else if (!o.keep_alive) {
    w.Append("Connection: close\r\n");
  } else if (o.http10_client) {
    w.Append("Connection: keep-alive\r\n");
  }
  w.Append(kCrlf);
}

}  // namespace

void EncodeProxiedResponseHead(const ResponseHead& node, const ResponseHeadOptions& o,
                               std::string* out) {
  out->clear();
  base::StringWriter w(out, ExpectedSize(node.headers, o));
  AppendStatusLine(w, o.status, o.reason);
  w.Append(o.server_line);
  bool has_body = o.framing != BodyFraming::kNoBody;
  bool edited = o.edits != nullptr && !o.edits->empty();
  HeaderLines lines(w);  // the node's lines that go out unchanged
  for (const Header& h : node.headers) {
    std::string_view n = h.name;
    const HeaderId id = HeaderIdOf(h);
    if (IsHopByHopId(id) || id == HeaderId::kServer ||
        (has_body && id == HeaderId::kContentLength)) {  // Content-Length: re-stated
      continue;
    }
    if (IsListedIn(n, node.connection_tokens, node.connection_token_count)) continue;
    if (edited && o.edits->Touches(n)) continue;  // a plugin set or removed it
    lines.Add(h);
  }
  lines.Flush();
  AppendTail(o, w);
}

void EncodeLocalResponseHead(const ResponseHeadOptions& o, std::string_view date,
                             std::string_view content_type, std::string* out) {
  out->clear();
  base::StringWriter w(out, 192 + o.server_line.size() + date.size() + content_type.size());
  AppendStatusLine(w, o.status, o.reason);
  w.Append("Date: ");
  w.Append(date);
  w.Append(kCrlf);
  if (o.edits == nullptr || !o.edits->Touches("content-type")) {
    w.Append("Content-Type: ");
    w.Append(content_type);
    w.Append(kCrlf);
  }
  w.Append(o.server_line);
  AppendTail(o, w);
}

}  // namespace turnpike::http
