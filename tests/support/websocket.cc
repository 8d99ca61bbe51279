#include "support/websocket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <random>

#include "support/net.h"

namespace turnpike::testing {
namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- SHA-1 (FIPS 180-4) and base64

uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

std::array<uint8_t, 20> Sha1(std::string_view data) {
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::string msg(data);
  uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back('\0');
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>((bit_len >> (i * 8)) & 0xff));
  for (size_t block = 0; block < msg.size(); block += 64) {
    uint32_t w[80];
    for (int t = 0; t < 16; ++t) {
      const auto* p = reinterpret_cast<const uint8_t*>(msg.data() + block + t * 4);
      w[t] = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
    }
    for (int t = 16; t < 80; ++t) w[t] = Rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; ++t) {
      uint32_t f, k;
      if (t < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999;
      } else if (t < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1;
      } else if (t < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6;
      }
      uint32_t temp = Rotl(a, 5) + f + e + k + w[t];
      e = d;
      d = c;
      c = Rotl(b, 30);
      b = a;
      a = temp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
  std::array<uint8_t, 20> out;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) out[i * 4 + j] = static_cast<uint8_t>(h[i] >> (24 - j * 8));
  }
  return out;
}

std::string Base64(const uint8_t* data, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t{data[i]} << 16;
    if (i + 1 < n) v |= uint32_t{data[i + 1]} << 8;
    if (i + 2 < n) v |= data[i + 2];
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? kAlphabet[v & 63] : '=');
  }
  return out;
}

// ---------------------------------------------------------------- blocking I/O

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// The value of header `name` in `head` (request or status line first), or "".
std::string HeaderOf(std::string_view head, std::string_view name) {
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    size_t end = head.find("\r\n", pos + 2);
    if (end == std::string_view::npos) break;
    std::string_view line = head.substr(pos + 2, end - pos - 2);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && EqualsIgnoreCase(line.substr(0, colon), name)) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
      return std::string(v);
    }
    pos = end;
  }
  return "";
}

// Appends what arrives to `buf` (waiting until `deadline`). False on EOF, error or timeout.
bool ReadSome(int fd, std::string* buf, Clock::time_point deadline, std::string* error) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      if (error) *error = "timeout";
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) {
      if (error) *error = rc == 0 ? "timeout" : std::strerror(errno);
      return false;
    }
    char chunk[65536];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = n == 0 ? "eof" : std::strerror(errno);
      return false;
    }
    buf->append(chunk, static_cast<size_t>(n));
    return true;
  }
}

bool Need(int fd, std::string* buf, size_t n, Clock::time_point deadline, std::string* error) {
  while (buf->size() < n) {
    if (!ReadSome(fd, buf, deadline, error)) return false;
  }
  return true;
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads an HTTP head (through CRLFCRLF) off the front of `buf`.
std::optional<std::string> ReadHead(int fd, std::string* buf, Clock::time_point deadline,
                                    std::string* error) {
  size_t end;
  while ((end = buf->find("\r\n\r\n")) == std::string::npos) {
    if (!ReadSome(fd, buf, deadline, error)) return std::nullopt;
  }
  std::string head = buf->substr(0, end + 4);
  buf->erase(0, end + 4);
  return head;
}

}  // namespace

std::string WsAcceptKey(std::string_view key) {
  std::array<uint8_t, 20> digest = Sha1(std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
  return Base64(digest.data(), digest.size());
}

std::string EncodeWsFrame(WsOpcode opcode, std::string_view payload, bool mask) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | static_cast<uint8_t>(opcode)));
  uint8_t mask_bit = mask ? 0x80 : 0;
  size_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(mask_bit | n));
  } else if (n <= 0xffff) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xff));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((uint64_t{n} >> (i * 8)) & 0xff));
  }
  if (!mask) {
    out.append(payload);
    return out;
  }
  static thread_local std::mt19937 rng(std::random_device{}());
  uint32_t m = rng();
  char key[4] = {static_cast<char>(m >> 24), static_cast<char>(m >> 16), static_cast<char>(m >> 8),
                 static_cast<char>(m)};
  out.append(key, 4);
  size_t start = out.size();
  out.append(payload);
  for (size_t i = 0; i < n; ++i) out[start + i] ^= key[i % 4];
  return out;
}

std::optional<WsFrame> ReadWsFrame(int fd, std::string* pending, std::chrono::milliseconds timeout,
                                   std::string* error) {
  Clock::time_point deadline = Clock::now() + timeout;
  std::string& buf = *pending;
  if (!Need(fd, &buf, 2, deadline, error)) return std::nullopt;
  auto b0 = static_cast<uint8_t>(buf[0]);
  auto b1 = static_cast<uint8_t>(buf[1]);
  if ((b0 & 0x80) == 0 || (b0 & 0x70) != 0) {
    if (error) *error = "fragmented or reserved bits set";
    return std::nullopt;
  }
  bool masked = (b1 & 0x80) != 0;
  uint64_t len = b1 & 0x7f;
  size_t pos = 2;
  if (len >= 126) {
    size_t ext = len == 126 ? 2 : 8;
    if (!Need(fd, &buf, pos + ext, deadline, error)) return std::nullopt;
    len = 0;
    for (size_t i = 0; i < ext; ++i) len = (len << 8) | static_cast<uint8_t>(buf[pos + i]);
    pos += ext;
  }
  char key[4] = {};
  if (masked) {
    if (!Need(fd, &buf, pos + 4, deadline, error)) return std::nullopt;
    std::memcpy(key, buf.data() + pos, 4);
    pos += 4;
  }
  if (!Need(fd, &buf, pos + len, deadline, error)) return std::nullopt;
  WsFrame f;
  f.opcode = static_cast<WsOpcode>(b0 & 0x0f);
  f.payload = buf.substr(pos, len);
  if (masked) {
    for (size_t i = 0; i < f.payload.size(); ++i) f.payload[i] ^= key[i % 4];
  }
  buf.erase(0, pos + len);
  return f;
}

std::string WsPattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i + static_cast<size_t>(seed)) % 251);
  return s;
}

// ---------------------------------------------------------------- the echo server

WsEchoServer::WsEchoServer() {
  listen_fd_ = ListenLoopback(0, &port_);
  if (listen_fd_ < 0) return;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

WsEchoServer::~WsEchoServer() {
  stop_ = true;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::vector<std::string> WsEchoServer::heads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heads_;
}

void WsEchoServer::AcceptLoop() {
  while (!stop_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;
    }
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void WsEchoServer::Serve(int fd) {
  std::string buf;
  for (;;) {
    std::string error;
    std::optional<std::string> head =
        ReadHead(fd, &buf, Clock::now() + std::chrono::seconds(60), &error);
    if (!head) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      heads_.push_back(*head);
    }
    std::string_view line(*head);
    line = line.substr(0, line.find("\r\n"));
    bool upgrade = EqualsIgnoreCase(HeaderOf(*head, "upgrade"), "websocket");
    bool plain = line.find("/plain ") != std::string_view::npos;
    if (line.find("/deny ") != std::string_view::npos) {
      if (!WriteAll(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\n\r\ndenied")) break;
      continue;
    }
    if (!upgrade || plain) {
      std::string answer = plain ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 426 Upgrade Required\r\n";
      if (!WriteAll(fd, answer + "Content-Length: 10\r\n\r\nno upgrade")) break;
      continue;
    }
    std::string response =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
        "websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        WsAcceptKey(HeaderOf(*head, "sec-websocket-key")) + "\r\n\r\n";
    if (line.find("/greet ") != std::string_view::npos) {
      response += EncodeWsFrame(WsOpcode::kText, "hello", /*mask=*/false);
    }
    if (!WriteAll(fd, response)) break;
    // What a client sent before the 101 reached it stays in `buf`.
    for (;;) {
      std::optional<WsFrame> f = ReadWsFrame(fd, &buf, std::chrono::seconds(60), &error);
      if (!f) break;
      if (f->opcode == WsOpcode::kClose) {
        WriteAll(fd, EncodeWsFrame(WsOpcode::kClose, f->payload, false));
        break;
      }
      if (f->opcode == WsOpcode::kPing) {
        if (!WriteAll(fd, EncodeWsFrame(WsOpcode::kPong, f->payload, false))) break;
        continue;
      }
      if (f->opcode == WsOpcode::kText && f->payload == "close-me") {
        WriteAll(fd, EncodeWsFrame(WsOpcode::kClose, "\x03\xe8", false));
        break;
      }
      if (f->opcode == WsOpcode::kText && f->payload.rfind("pause:", 0) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::stoul(f->payload.substr(6))));
        continue;
      }
      if (f->opcode == WsOpcode::kText && f->payload.rfind("send:", 0) == 0) {
        size_t n = std::stoul(f->payload.substr(5));
        if (!WriteAll(fd, EncodeWsFrame(WsOpcode::kBinary, WsPattern(n), false))) break;
        continue;
      }
      if (!WriteAll(fd, EncodeWsFrame(f->opcode, f->payload, false))) break;
    }
    break;
  }
  ::shutdown(fd, SHUT_RDWR);
  ++ended_;
  std::lock_guard<std::mutex> lock(mu_);
  for (int& f : fds_) {
    if (f == fd) f = -1;
  }
  ::close(fd);
}

// ---------------------------------------------------------------- the client

WsClient::~WsClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool WsClient::Handshake(int port, std::string_view path, std::string_view extra_headers) {
  fd_ = ConnectLoopback(port, std::chrono::seconds(5));
  if (fd_ < 0) return false;
  std::mt19937 rng(std::random_device{}());
  uint8_t raw[16];
  for (uint8_t& b : raw) b = static_cast<uint8_t>(rng());
  key_ = Base64(raw, sizeof(raw));
  std::string req = "GET " + std::string(path) +
                    " HTTP/1.1\r\nHost: ws.test\r\nUpgrade: "
                    "websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: " +
                    key_ + "\r\nSec-WebSocket-Version: 13\r\n" + std::string(extra_headers) +
                    "\r\n";
  if (!WriteAll(fd_, req)) return false;
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  std::optional<std::string> head = ReadHead(fd_, &pending_, deadline, nullptr);
  if (!head) return false;
  head_ = *head;
  status_ = std::atoi(head_.c_str() + 9);
  if (status_ != 101) {
    size_t n = static_cast<size_t>(std::atol(Header("content-length").c_str()));
    if (!Need(fd_, &pending_, n, deadline, nullptr)) return false;
    body_ = pending_.substr(0, n);
    pending_.erase(0, n);
  }
  return true;
}

std::string WsClient::Header(std::string_view name) const { return HeaderOf(head_, name); }

bool WsClient::Send(WsOpcode opcode, std::string_view payload) {
  return WriteAll(fd_, EncodeWsFrame(opcode, payload, /*mask=*/true));
}

bool WsClient::SendRaw(std::string_view bytes) { return WriteAll(fd_, bytes); }

std::optional<WsFrame> WsClient::Read(std::chrono::milliseconds timeout, std::string* error) {
  return ReadWsFrame(fd_, &pending_, timeout, error);
}

bool WsClient::ReadUntil(std::string_view marker, std::string* out,
                         std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (pending_.find(marker) == std::string::npos) {
    if (!ReadSome(fd_, &pending_, deadline, nullptr)) return false;
  }
  size_t end = pending_.find(marker) + marker.size();
  *out = pending_.substr(0, end);
  pending_.erase(0, end);
  return true;
}

bool WsClient::WaitForClose(std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    std::string error;
    pending_.clear();
    if (!ReadSome(fd_, &pending_, deadline, &error)) return error != "timeout";
  }
}

void WsClient::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

}  // namespace turnpike::testing
