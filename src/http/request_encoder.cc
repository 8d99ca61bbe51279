#include "http/request_encoder.h"

#include "base/strings.h"

namespace turnpike::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";

void AppendHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append(kCrlf);
}

}  // namespace

void EncodeForwardedRequestHead(const RequestHead& req, const ForwardedRequest& f,
                                std::string* out) {
  out->clear();
  out->append(f.method.empty() ? req.method_name : f.method);
  out->push_back(' ');
  if (!f.target.empty()) {
    out->append(f.target);
  } else if (!req.target.empty() && req.target[0] == '/') {
    out->append(req.target);
  } else {  // absolute-form or '*': send origin-form
    out->append(req.path);
    if (!req.query.empty()) {
      out->push_back('?');
      out->append(req.query);
    }
  }
  out->append(" HTTP/1.1\r\nHost: ");
  out->append(f.host);
  out->append(kCrlf);
  std::string_view xff_first;
  bool xff_many = false;
  bool edited = f.edits != nullptr && !f.edits->empty();
  std::string_view fwd_proto, fwd_host, fwd_port;
  for (const Header& h : req.headers) {
    std::string_view n = h.name;
    if (IsHopByHop(n) || IsListedIn(n, req.connection_tokens, req.connection_token_count)) {
      continue;
    }
    if (edited && f.edits->Touches(n)) continue;  // a plugin set or removed it
    switch (n.size()) {
      case 4:
        if (base::EqualsIgnoreCase(n, "host")) continue;
        break;
      case 6:
        if (base::EqualsIgnoreCase(n, "expect")) continue;
        break;
      case 9:
        if (base::EqualsIgnoreCase(n, "x-real-ip") || base::EqualsIgnoreCase(n, "forwarded")) {
          continue;
        }
        break;
      case 14:
        if (base::EqualsIgnoreCase(n, "content-length")) continue;
        break;
      case 15:
        if (base::EqualsIgnoreCase(n, "x-forwarded-for")) {
          if (f.drop_client_forwarded_for) continue;
          if (xff_first.empty()) {
            xff_first = h.value;
          } else {
            xff_many = true;
          }
          continue;
        }
        break;
      case 16:
        if (base::EqualsIgnoreCase(n, "x-forwarded-host")) {
          if (f.trusted_peer) fwd_host = h.value;
          continue;
        }
        if (base::EqualsIgnoreCase(n, "x-forwarded-port")) {
          if (f.trusted_peer) fwd_port = h.value;
          continue;
        }
        break;
      case 17:
        if (base::EqualsIgnoreCase(n, "x-forwarded-proto")) {
          if (f.trusted_peer) fwd_proto = h.value;
          continue;
        }
        break;
      default:
        break;
    }
    AppendHeader(out, n, h.value);
  }
  AppendHeader(out, "X-Real-IP", f.remote_addr);
  out->append("X-Forwarded-For: ");
  if (xff_many) {
    for (const Header& h : req.headers) {
      if (base::EqualsIgnoreCase(h.name, "x-forwarded-for")) {
        out->append(h.value);
        out->append(", ");
      }
    }
  } else if (!xff_first.empty()) {
    out->append(xff_first);
    out->append(", ");
  }
  out->append(f.remote_addr);
  out->append(kCrlf);
  AppendHeader(out, "X-Forwarded-Proto", fwd_proto.empty() ? "http" : fwd_proto);
  AppendHeader(out, "X-Forwarded-Host", !fwd_host.empty() ? fwd_host : f.forwarded_host);
  out->append("X-Forwarded-Port: ");
  std::string_view host = req.host;
  size_t colon = host.rfind(':');
  if (!fwd_port.empty()) {
    out->append(fwd_port);
  } else if (colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos &&
             colon + 1 < host.size()) {
    out->append(host.substr(colon + 1));
  } else {
    out->append(f.local_port);
  }
  out->append(kCrlf);
  if (edited) {
    f.edits->ForEachSet(
        [&](std::string_view name, std::string_view value) { AppendHeader(out, name, value); });
  }
  if (req.framing == Framing::kContentLength) {
    out->append("Content-Length: ");
    base::AppendDecimal(out, req.content_length);
    out->append(kCrlf);
  } else if (req.framing == Framing::kChunked) {
    out->append("Transfer-Encoding: chunked\r\n");
  }
  out->append(kCrlf);
}

}  // namespace turnpike::http
