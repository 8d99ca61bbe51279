#include "http/request_encoder.h"

#include <cstdint>
#include <cstring>

#include "base/string_writer.h"
#include "base/strings.h"
#include "http/header_lines.h"

namespace turnpike::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";

// What a plugin hands in is written with its control bytes as %XX (header_edits.h), so no
// value, whatever a template rendered into it, can end a line of the head. `space`: a space
// too (a request line's parts are separated by single spaces, so one in the target would
// move the HTTP version).
void AppendSafe(base::StringWriter& w, std::string_view s, bool space = false) {
  AppendEscapingControls(w, s, space ? 0x21 : 0x20);
}

// How the encoder treats a header a plugin set or added.
enum class EditKind : uint8_t {
  kSend,            // as the plugin says
  kDrop,            // never from a plugin: body framing, hop-by-hop, Host (the plugin's host
                    // goes through SetUpstreamHost), X-Real-IP (always the client)
  kForwardedFor,    // the plugin's chain, then the client address
  kForwardedProto,  // replaces the proxy's own value
  kForwardedHost,
  kForwardedPort,
};

EditKind KindOfEdit(std::string_view n) {
  const HeaderId id = ClassifyHeaderName(n);
  switch (id) {
    case HeaderId::kHost:
    case HeaderId::kXRealIp:
    case HeaderId::kContentLength:
      return EditKind::kDrop;
    case HeaderId::kXForwardedFor:
      return EditKind::kForwardedFor;
    case HeaderId::kXForwardedHost:
      return EditKind::kForwardedHost;
    case HeaderId::kXForwardedPort:
      return EditKind::kForwardedPort;
    case HeaderId::kXForwardedProto:
      return EditKind::kForwardedProto;
    default:
      return IsHopByHopId(id) ? EditKind::kDrop : EditKind::kSend;
  }
}

// One of X-Forwarded-Proto/Host/Port (`prefix`: "Name: "): the proxy's own `value`, unless a
// plugin's edits decide it (the newest value; a removal sends none, as APISIX since
// apache/apisix#13753).
void AppendForwarded(base::StringWriter& w, const HeaderEdits* edits, std::string_view prefix,
                     std::string_view lower_name, std::string_view value) {
  if (edits != nullptr) {
    if (const HeaderEdit* d = edits->Decides(lower_name)) {
      if (d->remove) return;
      value = d->safe_value;
    }
  }
  w.Append(prefix);
  w.Append(value);
  w.Append(kCrlf);
}

}  // namespace

void EncodeForwardedRequestHead(const RequestHead& req, const ForwardedRequest& f,
                                std::string* out) {
  out->clear();
  // About the client's head, plus what the proxy adds (a guess: the writer grows past it).
  size_t expect = 256;
  if (!req.headers.empty()) {
    expect += SpanOfViews(req.method_name, req.headers.back().value);
  }
  base::StringWriter w(out, expect);
  if (f.method.empty()) {
    w.Append(req.method_name);
  } else {
    AppendSafe(w, f.method, /*space=*/true);
  }
  w.Push(' ');
  if (!f.target.empty()) {
    AppendSafe(w, f.target, /*space=*/true);
  } else if (!req.target.empty() && req.target[0] == '/') {
    w.Append(req.target);
  } else {  // absolute-form or '*': send origin-form
    w.Append(req.path);
    if (!req.query.empty()) {
      w.Push('?');
      w.Append(req.query);
    }
  }
  w.Append(" HTTP/1.1\r\nHost: ");
  if (f.host_from_plugin) {
    AppendSafe(w, f.host);
  } else {
    w.Append(f.host);
  }
  w.Append(kCrlf);
  std::string_view xff_first;
  bool xff_many = false;
  bool edited = f.edits != nullptr && !f.edits->empty();
  std::string_view fwd_proto, fwd_host, fwd_port;
  HeaderLines lines(w);  // the client's lines that go up unchanged
  for (const Header& h : req.headers) {
    std::string_view n = h.name;
    const HeaderId id = HeaderIdOf(h);
    if (IsHopByHopId(id) || IsListedIn(n, req.connection_tokens, req.connection_token_count)) {
      continue;
    }
    if (edited && f.edits->Touches(n)) continue;  // a plugin set or removed it
    switch (id) {
      case HeaderId::kHost:
      case HeaderId::kExpect:
      case HeaderId::kXRealIp:
      case HeaderId::kForwarded:
      case HeaderId::kContentLength:
        continue;
      case HeaderId::kXForwardedFor:
        if (f.drop_client_forwarded_for) continue;
        if (xff_first.empty()) {
          xff_first = h.value;
        } else {
          xff_many = true;
        }
        continue;
      case HeaderId::kXForwardedHost:
        if (f.trusted_peer) fwd_host = h.value;
        continue;
      case HeaderId::kXForwardedPort:
        if (f.trusted_peer) fwd_port = h.value;
        continue;
      case HeaderId::kXForwardedProto:
        if (f.trusted_peer) fwd_proto = h.value;
        continue;
      default:
        break;
    }
    lines.Add(h);
  }
  lines.Flush();
  const HeaderEdits* edits = edited ? f.edits : nullptr;
  w.Append("X-Real-IP: ");
  w.Append(f.remote_addr);
  w.Append("\r\nX-Forwarded-For: ");
  if (edits != nullptr && edits->Touches("x-forwarded-for")) {
    // The plugins' chain replaces the client's (nginx's $proxy_add_x_forwarded_for reads the
    // header as the plugins left it); the client address still ends it.
    edits->ForEachSet([&](const HeaderEdit& e) {
      if (KindOfEdit(e.name) != EditKind::kForwardedFor) return;
      w.Append(e.safe_value);
      w.Append(", ");
    });
  } else if (xff_many) {
    for (const Header& h : req.headers) {
      if (HeaderIdOf(h) == HeaderId::kXForwardedFor) {
        w.Append(h.value);
        w.Append(", ");
      }
    }
  } else if (!xff_first.empty()) {
    w.Append(xff_first);
    w.Append(", ");
  }
  if (edits != nullptr && !edits->Touches("x-forwarded-for")) {
    // Lines a plugin added to the client's chain.
    edits->ForEachSet([&](const HeaderEdit& e) {
      if (KindOfEdit(e.name) != EditKind::kForwardedFor) return;
      w.Append(e.safe_value);
      w.Append(", ");
    });
  }
  w.Append(f.remote_addr);
  w.Append(kCrlf);
  // A plugin's X-Forwarded-Proto/Host/Port replace the proxy's own (APISIX sets them after
  // the plugins ran, from the request headers as the plugins left them).
  AppendForwarded(w, edits, "X-Forwarded-Proto: ", "x-forwarded-proto",
                  fwd_proto.empty() ? "http" : fwd_proto);
  AppendForwarded(w, edits, "X-Forwarded-Host: ", "x-forwarded-host",
                  !fwd_host.empty() ? fwd_host : f.forwarded_host);
  std::string_view port = f.local_port;
  std::string_view host = req.host;
  size_t colon = host.rfind(':');
  if (!fwd_port.empty()) {
    port = fwd_port;
  } else if (colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos &&
             colon + 1 < host.size()) {
    port = host.substr(colon + 1);
  }
  AppendForwarded(w, edits, "X-Forwarded-Port: ", "x-forwarded-port", port);
  if (edits != nullptr) {
    edits->ForEachSet([&](const HeaderEdit& e) {
      if (KindOfEdit(e.name) == EditKind::kSend) w.Append(e.line);
    });
  }
  if (!f.upgrade.empty()) {
    w.Append("Upgrade: ");
    w.Append(f.upgrade);
    w.Append("\r\nConnection: upgrade\r\n");
  }
  if (req.framing == Framing::kContentLength) {
    w.Append("Content-Length: ");
    w.AppendDecimal(req.content_length);
    w.Append(kCrlf);
  } else if (req.framing == Framing::kChunked) {
    w.Append("Transfer-Encoding: chunked\r\n");
  }
  w.Append(kCrlf);
}

}  // namespace turnpike::http
