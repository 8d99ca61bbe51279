#include "http/request_encoder.h"

#include <cstdint>
#include <cstring>

#include "base/strings.h"

namespace turnpike::http {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr char kHex[] = "0123456789ABCDEF";

void AppendHeader(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append(kCrlf);
}

// What a plugin hands in is written with its control bytes (CR, LF, NUL, the rest below 0x20,
// DEL) as %XX, so no value, whatever a template rendered into it, can end a line of the head.
// `space`: a space too (a request line's parts are separated by single spaces, so one in the
// target would move the HTTP version).
// The index of the first byte of `s` from `from` on that is below `lowest` or DEL, or s.size().
// Eight bytes at a time (SWAR): values are almost always clean, and this runs on every value
// a plugin hands in.
size_t FindUnsafe(std::string_view s, size_t from, unsigned char lowest) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  const uint64_t below = kOnes * lowest;
  size_t i = from;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    // A byte below `lowest` (bytes from 0x80 up are fine: ~x masks them out), or DEL.
    const uint64_t del = x ^ (kOnes * 0x7f);
    if ((((x - below) & ~x) | ((del - kOnes) & ~del)) & kHighs) break;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < lowest || c == 0x7f) return i;
  }
  return i;
}

void AppendSafe(std::string* out, std::string_view s, bool space = false) {
  const unsigned char lowest = space ? 0x21 : 0x20;
  size_t run = 0;  // start of the bytes not yet appended
  for (size_t i = FindUnsafe(s, 0, lowest); i < s.size(); i = FindUnsafe(s, run, lowest)) {
    const auto c = static_cast<unsigned char>(s[i]);
    out->append(s.data() + run, i - run);
    const char esc[3] = {'%', kHex[c >> 4], kHex[c & 0xf]};
    out->append(esc, sizeof(esc));
    run = i + 1;
  }
  out->append(s.data() + run, s.size() - run);
}

void AppendSafeHeader(std::string* out, std::string_view name, std::string_view value) {
  AppendSafe(out, name);
  out->append(": ");
  AppendSafe(out, value);
  out->append(kCrlf);
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
  if (IsHopByHop(n)) return EditKind::kDrop;
  switch (n.size()) {
    case 4:
      if (base::EqualsIgnoreCase(n, "host")) return EditKind::kDrop;
      break;
    case 9:
      if (base::EqualsIgnoreCase(n, "x-real-ip")) return EditKind::kDrop;
      break;
    case 14:
      if (base::EqualsIgnoreCase(n, "content-length")) return EditKind::kDrop;
      break;
    case 15:
      if (base::EqualsIgnoreCase(n, "x-forwarded-for")) return EditKind::kForwardedFor;
      break;
    case 16:
      if (base::EqualsIgnoreCase(n, "x-forwarded-host")) return EditKind::kForwardedHost;
      if (base::EqualsIgnoreCase(n, "x-forwarded-port")) return EditKind::kForwardedPort;
      break;
    case 17:
      if (base::EqualsIgnoreCase(n, "x-forwarded-proto")) return EditKind::kForwardedProto;
      break;
    default:
      break;
  }
  return EditKind::kSend;
}

// One of X-Forwarded-Proto/Host/Port: the proxy's own `value`, unless a plugin's edits
// decide it (the newest value; a removal sends none, as APISIX since apache/apisix#13753).
void AppendForwarded(std::string* out, const HeaderEdits* edits, std::string_view name,
                     std::string_view lower_name, std::string_view value) {
  if (edits != nullptr) {
    if (std::optional<const std::string*> d = edits->Decides(lower_name)) {
      if (*d != nullptr) AppendSafeHeader(out, name, **d);
      return;
    }
  }
  AppendHeader(out, name, value);
}

}  // namespace

void EncodeForwardedRequestHead(const RequestHead& req, const ForwardedRequest& f,
                                std::string* out) {
  out->clear();
  if (f.method.empty()) {
    out->append(req.method_name);
  } else {
    AppendSafe(out, f.method, /*space=*/true);
  }
  out->push_back(' ');
  if (!f.target.empty()) {
    AppendSafe(out, f.target, /*space=*/true);
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
  if (f.host_from_plugin) {
    AppendSafe(out, f.host);
  } else {
    out->append(f.host);
  }
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
  const HeaderEdits* edits = edited ? f.edits : nullptr;
  AppendHeader(out, "X-Real-IP", f.remote_addr);
  out->append("X-Forwarded-For: ");
  if (edits != nullptr && edits->Touches("x-forwarded-for")) {
    // The plugins' chain replaces the client's (nginx's $proxy_add_x_forwarded_for reads the
    // header as the plugins left it); the client address still ends it.
    edits->ForEachSet([&](std::string_view name, std::string_view value) {
      if (KindOfEdit(name) != EditKind::kForwardedFor) return;
      AppendSafe(out, value);
      out->append(", ");
    });
  } else if (xff_many) {
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
  if (edits != nullptr && !edits->Touches("x-forwarded-for")) {
    // Lines a plugin added to the client's chain.
    edits->ForEachSet([&](std::string_view name, std::string_view value) {
      if (KindOfEdit(name) != EditKind::kForwardedFor) return;
      AppendSafe(out, value);
      out->append(", ");
    });
  }
  out->append(f.remote_addr);
  out->append(kCrlf);
  // A plugin's X-Forwarded-Proto/Host/Port replace the proxy's own (APISIX sets them after
  // the plugins ran, from the request headers as the plugins left them).
  AppendForwarded(out, edits, "X-Forwarded-Proto", "x-forwarded-proto",
                  fwd_proto.empty() ? "http" : fwd_proto);
  AppendForwarded(out, edits, "X-Forwarded-Host", "x-forwarded-host",
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
  AppendForwarded(out, edits, "X-Forwarded-Port", "x-forwarded-port", port);
  if (edits != nullptr) {
    edits->ForEachSet([&](std::string_view name, std::string_view value) {
      if (KindOfEdit(name) == EditKind::kSend) AppendSafeHeader(out, name, value);
    });
  }
  if (!f.upgrade.empty()) {
    out->append("Upgrade: ");
    out->append(f.upgrade);
    out->append("\r\nConnection: upgrade\r\n");
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
