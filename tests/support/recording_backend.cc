#include "support/recording_backend.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "support/net.h"

namespace turnpike::testing {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string> Values(std::string_view head, std::string_view name) {
  std::vector<std::string> out;
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    size_t end = head.find("\r\n", pos + 2);
    if (end == std::string_view::npos) break;
    std::string_view line = head.substr(pos + 2, end - pos - 2);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && EqualsIgnoreCase(line.substr(0, colon), name)) {
      out.emplace_back(Trim(line.substr(colon + 1)));
    }
    pos = end;
  }
  return out;
}

// Incremental strict request reader over a growing buffer.
class Reader {
 public:
  // Returns a complete request taken off the front of `buf`, nullopt when more bytes are
  // needed; sets *bad for framing this reader does not accept.
  std::optional<RecordedRequest> Next(std::string* buf, bool* bad) {
    size_t head_end = buf->find("\r\n\r\n");
    if (head_end == std::string::npos) return std::nullopt;
    RecordedRequest r;
    r.head = buf->substr(0, head_end + 4);
    size_t pos = head_end + 4;
    std::vector<std::string> te = Values(r.head, "transfer-encoding");
    std::vector<std::string> cl = Values(r.head, "content-length");
    if (!te.empty()) {
      if (te.size() != 1 || !EqualsIgnoreCase(te[0], "chunked") || !cl.empty()) {
        *bad = true;
        return std::nullopt;
      }
      r.chunked = true;
      for (;;) {
        size_t line_end = buf->find("\r\n", pos);
        if (line_end == std::string::npos) return std::nullopt;
        std::string size_text = buf->substr(pos, line_end - pos);
        size_t semi = size_text.find(';');
        if (semi != std::string::npos) size_text.resize(semi);
        char* end = nullptr;
        unsigned long long size = std::strtoull(size_text.c_str(), &end, 16);
        if (size_text.empty() || end != size_text.c_str() + size_text.size()) {
          *bad = true;
          return std::nullopt;
        }
        pos = line_end + 2;
        if (size == 0) {
          size_t trailers_end = buf->find("\r\n", pos);
          while (trailers_end != std::string::npos && trailers_end != pos) {
            pos = trailers_end + 2;
            trailers_end = buf->find("\r\n", pos);
          }
          if (trailers_end == std::string::npos) return std::nullopt;
          pos += 2;
          break;
        }
        if (buf->size() < pos + size + 2) return std::nullopt;
        r.body.append(*buf, pos, size);
        if (buf->compare(pos + size, 2, "\r\n") != 0) {
          *bad = true;
          return std::nullopt;
        }
        pos += size + 2;
      }
    } else if (!cl.empty()) {
      if (cl.size() != 1) {
        *bad = true;
        return std::nullopt;
      }
      unsigned long long n = std::strtoull(cl[0].c_str(), nullptr, 10);
      if (buf->size() < pos + n) return std::nullopt;
      r.body = buf->substr(pos, n);
      pos += n;
    }
    buf->erase(0, pos);
    return r;
  }
};

}  // namespace

std::vector<std::string> RecordedRequest::HeaderValues(const std::string& name) const {
  return Values(head, name);
}

RecordingBackend::RecordingBackend(Responder responder) : responder_(std::move(responder)) {
  if (!responder_) {
    responder_ = [](const RecordedRequest&, int index) {
      std::string body = "ok " + std::to_string(index);
      return ScriptedResponse{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\n\r\n" + body};
    };
  }
  listen_fd_ = ListenLoopback(0, &port_);
  if (listen_fd_ < 0) return;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

RecordingBackend::~RecordingBackend() {
  stop_ = true;
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void RecordingBackend::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int connection = ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(fd);
    raw_.emplace_back();
    threads_.emplace_back([this, fd, connection] { Serve(fd, connection); });
  }
}

void RecordingBackend::Serve(int fd, int connection) {
  std::string buf;
  Reader reader;
  char chunk[16 * 1024];
  bool open = true;
  while (open && !stop_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    {
      std::lock_guard<std::mutex> lock(mu_);
      raw_[static_cast<size_t>(connection - 1)].append(chunk, static_cast<size_t>(n));
    }
    for (;;) {
      bool bad = false;
      std::optional<RecordedRequest> r = reader.Next(&buf, &bad);
      if (bad) {
        open = false;
        break;
      }
      if (!r) break;
      r->connection = connection;
      int index;
      {
        std::lock_guard<std::mutex> lock(mu_);
        index = static_cast<int>(requests_.size());
        requests_.push_back(*r);
      }
      ScriptedResponse resp = responder_(*r, index);
      size_t off = 0;
      while (off < resp.bytes.size()) {
        ssize_t w = ::send(fd, resp.bytes.data() + off, resp.bytes.size() - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += static_cast<size_t>(w);
      }
      if (resp.close) {
        open = false;
        break;
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (int& f : fds_) {
    if (f == fd) f = -1;
  }
  ::close(fd);
}

std::vector<RecordedRequest> RecordingBackend::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::string RecordingBackend::raw() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string all;
  for (const std::string& r : raw_) all += r;
  return all;
}

}  // namespace turnpike::testing
