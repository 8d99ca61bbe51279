#include "proxy/request_facts.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>

#include "base/strings.h"

namespace turnpike::proxy {
namespace {

std::atomic<uint64_t> next_connection_serial{1};

// nginx's "%T.%03M": seconds with milliseconds.
void AppendMs(std::string* out, uint64_t ms) {
  base::AppendDecimal(out, ms / 1000);
  char frac[4] = {'.', static_cast<char>('0' + ms % 1000 / 100),
                  static_cast<char>('0' + ms % 100 / 10), static_cast<char>('0' + ms % 10)};
  out->append(frac, sizeof(frac));
}

std::string_view Hostname() {
  static const std::string name = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) return std::string("localhost");
    return std::string(buf);
  }();
  return name;
}

std::string_view Pid() {
  static const std::string pid = std::to_string(getpid());
  return pid;
}

uint64_t SplitMix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

RequestFacts::RequestFacts() {
  serial_ = next_connection_serial.fetch_add(1, std::memory_order_relaxed);
  uint64_t seed[2] = {};
  if (getrandom(seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed)) {
    seed[0] = static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    seed[1] = serial_;
  }
  rng_[0] = SplitMix(&seed[0]);
  rng_[1] = SplitMix(&seed[1]) | 1;  // xorshift128+ needs a non-zero state
}

// xorshift128+: $request_id must be unpredictable enough to be unique, not secret.
uint64_t RequestFacts::NextRandom() {
  uint64_t s1 = rng_[0];
  const uint64_t s0 = rng_[1];
  rng_[0] = s0;
  s1 ^= s1 << 23;
  rng_[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
  return rng_[1] + s0;
}

void RequestFacts::Begin(uint64_t loop_ms, int64_t wall_ms, size_t head_bytes) {
  ++requests_;
  request_id_made_ = false;
  start_loop_ms_ = loop_ms;
  start_wall_ms_ = wall_ms;
  head_bytes_ = head_bytes;
  finished_ = false;
  end_ms_ = 0;
  bytes_sent_ = 0;
  request_body_bytes_ = 0;
  response_head_ = {};
  request_body_ = {};
  attempts_ = 0;
  upstream_host_.clear();
}

void RequestFacts::UpstreamAttempt(std::string_view ip, uint16_t port,
                                   std::string_view host_header, uint64_t now_ms) {
  Peer& p = last_peer_;
  p.ip_len = static_cast<uint8_t>(std::min(ip.size(), sizeof(p.ip)));
  std::memcpy(p.ip, ip.data(), p.ip_len);
  p.port = port;
  upstream_host_.assign(host_header);
  if (attempts_ < kMaxAttempts) {
    attempt_[attempts_] = Attempt{.start = now_ms};
    peer_[attempts_] = p;
  }
  ++attempts_;
}

void RequestFacts::UpstreamConnected(uint64_t now_ms, bool reused) {
  if (attempts_ == 0 || attempts_ > kMaxAttempts) return;
  Attempt& a = attempt_[attempts_ - 1];
  a.connected = reused ? a.start : now_ms;
}

void RequestFacts::UpstreamHeader(int status, uint64_t now_ms) {
  if (attempts_ == 0 || attempts_ > kMaxAttempts) return;
  Attempt& a = attempt_[attempts_ - 1];
  a.header = now_ms;
  a.status = static_cast<uint16_t>(status);
}

void RequestFacts::UpstreamEnd(int status, uint64_t now_ms) {
  if (attempts_ == 0 || attempts_ > kMaxAttempts) return;
  Attempt& a = attempt_[attempts_ - 1];
  if (a.end != kNone) return;
  a.end = now_ms;
  if (status != 0) a.status = static_cast<uint16_t>(status);
}

void RequestFacts::Finish(uint64_t now_ms, uint64_t bytes_sent, uint64_t request_body_bytes,
                          std::string_view response_head) {
  finished_ = true;
  end_ms_ = now_ms;
  bytes_sent_ = bytes_sent;
  request_body_bytes_ = request_body_bytes;
  response_head_ = response_head;
  // An attempt still open (a response cut short) ends now.
  if (attempts_ > 0 && attempts_ <= kMaxAttempts && attempt_[attempts_ - 1].end == kNone) {
    attempt_[attempts_ - 1].end = now_ms;
  }
}

std::string_view RequestFacts::RenderTimes(enum Slot s, uint64_t Attempt::*field) {
  std::string& out = Slot(s);
  uint32_t n = attempts_ < kMaxAttempts ? attempts_ : static_cast<uint32_t>(kMaxAttempts);
  for (uint32_t i = 0; i < n; ++i) {
    if (i > 0) out.append(", ");
    const Attempt& a = attempt_[i];
    uint64_t t = a.*field;
    if (t == kNone || t < a.start) {
      out.push_back('-');
    } else {
      AppendMs(&out, t - a.start);
    }
  }
  return out;
}

std::optional<std::string_view> RequestFacts::Get(BuiltinVar v, const http::RequestHead& req,
                                                  bool has_upstream) {
  switch (v) {
    case BuiltinVar::kHostname: return Hostname();
    case BuiltinVar::kPid: return Pid();
    case BuiltinVar::kServerName: return std::string_view("_");
    case BuiltinVar::kRequest: {
      if (req.method_name.empty()) return std::nullopt;  // no request line was read (414, 431)
      std::string& out = Slot(kSlotRequest);
      out.append(req.method_name);
      out.push_back(' ');
      out.append(req.target);
      out.append(req.version_minor == 0 ? " HTTP/1.0" : " HTTP/1.1");
      return std::string_view(out);
    }
    case BuiltinVar::kRequestLength: {
      if (!finished_) return std::nullopt;  // head + body: known at the end
      std::string& out = Slot(kSlotRequestLength);
      base::AppendDecimal(&out, head_bytes_ + request_body_bytes_);
      return std::string_view(out);
    }
    case BuiltinVar::kRequestTime: {
      if (!finished_) return std::nullopt;
      std::string& out = Slot(kSlotRequestTime);
      AppendMs(&out, end_ms_ >= start_loop_ms_ ? end_ms_ - start_loop_ms_ : 0);
      return std::string_view(out);
    }
    case BuiltinVar::kMsec: {
      std::string& out = Slot(kSlotMsec);
      int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
      AppendMs(&out, static_cast<uint64_t>(now));
      return std::string_view(out);
    }
    case BuiltinVar::kTimeIso8601: {
      // strftime's %z is "+0000"; nginx's ISO 8601 time has "+00:00".
      std::string& out = Slot(kSlotTime);
      out.append(iso_time_.Get(std::time(nullptr)));
      if (out.size() >= 5) out.insert(out.size() - 2, 1, ':');
      return std::string_view(out);
    }
    case BuiltinVar::kTimeLocal: return log_time_.Get(std::time(nullptr));
    case BuiltinVar::kConnection: {
      std::string& out = Slot(kSlotConnection);
      base::AppendDecimal(&out, serial_);
      return std::string_view(out);
    }
    case BuiltinVar::kConnectionRequests: {
      std::string& out = Slot(kSlotConnectionRequests);
      base::AppendDecimal(&out, requests_);
      return std::string_view(out);
    }
    case BuiltinVar::kRequestId: {
      std::string& out = slots_[kSlotRequestId];
      if (!request_id_made_) {
        static constexpr char kHex[] = "0123456789abcdef";
        out.assign(32, '0');
        uint64_t halves[2] = {NextRandom(), NextRandom()};
        for (size_t i = 0; i < 32; ++i) {
          out[i] = kHex[(halves[i / 16] >> ((i % 16) * 4)) & 0xf];
        }
        request_id_made_ = true;
      }
      return std::string_view(out);
    }
    case BuiltinVar::kBytesSent: {
      if (!finished_) return std::nullopt;
      std::string& out = Slot(kSlotBytes);
      base::AppendDecimal(&out, bytes_sent_);
      return std::string_view(out);
    }
    case BuiltinVar::kBodyBytesSent: {
      if (!finished_) return std::nullopt;
      std::string& out = Slot(kSlotBodyBytes);
      uint64_t head = response_head_.size();
      base::AppendDecimal(&out, bytes_sent_ > head ? bytes_sent_ - head : 0);
      return std::string_view(out);
    }
    case BuiltinVar::kUpstreamScheme:
      if (!has_upstream) return std::nullopt;
      return std::string_view("http");
    case BuiltinVar::kUpstreamHost:
      if (attempts_ == 0) return std::nullopt;
      return std::string_view(upstream_host_);
    case BuiltinVar::kUpstreamAddr: {
      if (attempts_ == 0) return std::nullopt;
      // "ip:port, [v6]:port" per attempt (nginx's list).
      std::string& out = Slot(kSlotUpstreamAddr);
      size_t n = std::min<size_t>(attempts_, kMaxAttempts);
      for (size_t i = 0; i < n; ++i) {
        const Peer& p = i + 1 == n ? last_peer_ : peer_[i];
        if (i > 0) out.append(", ");
        bool v6 = p.ip_view().find(':') != std::string_view::npos;
        if (v6) out.push_back('[');
        out.append(p.ip_view());
        if (v6) out.push_back(']');
        out.push_back(':');
        base::AppendDecimal(&out, p.port);
      }
      return std::string_view(out);
    }
    case BuiltinVar::kBalancerIp: {
      if (attempts_ == 0) return std::nullopt;
      std::string& out = Slot(kSlotBalancerIp);
      out.append(last_peer_.ip_view());
      return std::string_view(out);
    }
    case BuiltinVar::kBalancerPort: {
      if (attempts_ == 0) return std::nullopt;
      std::string& out = Slot(kSlotBalancerPort);
      base::AppendDecimal(&out, last_peer_.port);
      return std::string_view(out);
    }
    case BuiltinVar::kUpstreamStatus: {
      if (attempts_ == 0) return std::nullopt;
      std::string& out = Slot(kSlotUpstreamStatus);
      uint32_t n = attempts_ < kMaxAttempts ? attempts_ : static_cast<uint32_t>(kMaxAttempts);
      bool any = false;
      for (uint32_t i = 0; i < n; ++i) {
        if (i > 0) out.append(", ");
        if (attempt_[i].status == 0) {
          out.push_back('-');
        } else {
          base::AppendDecimal(&out, attempt_[i].status);
          any = true;
        }
      }
      if (!any) return std::nullopt;  // nothing came back yet
      return std::string_view(out);
    }
    case BuiltinVar::kUpstreamConnectTime:
      if (attempts_ == 0) return std::nullopt;
      return RenderTimes(kSlotConnectTime, &Attempt::connected);
    case BuiltinVar::kUpstreamHeaderTime:
      if (attempts_ == 0) return std::nullopt;
      return RenderTimes(kSlotHeaderTime, &Attempt::header);
    case BuiltinVar::kUpstreamResponseTime:
      if (attempts_ == 0 || attempt_[std::min<uint32_t>(attempts_, kMaxAttempts) - 1].end == kNone) {
        return std::nullopt;  // nginx sets it when the upstream part is over
      }
      return RenderTimes(kSlotResponseTime, &Attempt::end);
    case BuiltinVar::kRequestBody:
      if (request_body_.data() == nullptr) return std::nullopt;
      return request_body_;
    default:
      break;
  }
  return std::nullopt;
}

RequestTiming RequestFacts::timing() const {
  RequestTiming t;
  t.start_ms = start_wall_ms_;
  if (!finished_) return t;
  t.latency_ms = static_cast<int64_t>(end_ms_ >= start_loop_ms_ ? end_ms_ - start_loop_ms_ : 0);
  uint32_t n = attempts_ < kMaxAttempts ? attempts_ : static_cast<uint32_t>(kMaxAttempts);
  if (n > 0) {
    int64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const Attempt& a = attempt_[i];
      if (a.end != kNone && a.end >= a.start) sum += static_cast<int64_t>(a.end - a.start);
    }
    t.upstream_ms = sum;
  }
  return t;
}

RequestSizes RequestFacts::sizes() const {
  if (!finished_) return {};
  return {.request_length = static_cast<int64_t>(head_bytes_ + request_body_bytes_),
          .bytes_sent = static_cast<int64_t>(bytes_sent_)};
}

void RequestFacts::VisitResponseHeaders(HeaderVisitor& visitor) const {
  std::string_view head = response_head_;
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) return;
  head.remove_prefix(eol + 2);  // the status line
  while (!head.empty()) {
    eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    if (line.empty()) break;  // end of the head
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      visitor.Visit(line.substr(0, colon), base::TrimWhitespace(line.substr(colon + 1)));
    }
    if (eol == std::string_view::npos) break;
    head.remove_prefix(eol + 2);
  }
}

}  // namespace turnpike::proxy
