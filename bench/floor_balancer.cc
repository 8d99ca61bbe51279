// floor_balancer: the null control of bench/node_churn.sh (GATEWAY=floor). The least a proxy
// with a round-robin upstream of many addresses does per request, and the same rotation of
// addresses as bench/fake_kube_churn with no discovery, no set built, no gateway at all: what
// rotating the addresses costs the p99 on this machine whatever the proxy (the kernel's work for
// 12,000 loopback connections instead of 10,000, the bench's one backend nginx, the host).
//
// The addresses (IPv4, one a line in --ips, all served on --port) are cut into blocks of --slice
// addresses; the set is the first --nodes of them, one block per slice, in slice order. Every
// --interval-ms (0: never) one slice in turn takes the spare block that has waited longest and
// its block becomes a spare, as fake_kube_churn's changes do; the set's 250 entries are
// overwritten in place (no set is built: the cheapest change a proxy can make). Requests go to
// the set's entries in turn (a round robin whose position goes on over a change, as Turnpike's).
//
// One worker thread (the bench reads the worker as the busiest thread that is not the main
// one), level-triggered epoll and read(2)/send(2) as libuv's, and a loop turn's sends made together after its last event, as Turnpike's WriteBatch makes them.
// Upstream connections are kept per address (idle ones on a stack, opened on first need with a
// non-blocking connect) and reused with keep-alive. A request head (a GET, no body) is forwarded
// as received once its blank line is in; an answer (head + Content-Length body) is forwarded
// once complete. No allocation per request once warm (one Upstream per connection made). A
// failed connect, an upstream that closes with a request on it, or a message larger than the
// buffer closes the client connection (wrk counts it as an error).
//
// With --watch-port P the main thread stands where Turnpike's control thread does: it holds a
// Kubernetes watch of every EndpointSlice open on 127.0.0.1:P (bench/fake_kube_churn, token
// "churn"), reads every byte of the stream and discards it (no parse, no set), opening it again if
// it ends. What serving and delivering the watch costs the machine is then in the null too, and
// the proxy's rotation still runs on its own timer. Without it the main thread only waits.
//
// Prints "LISTENING <port>" once serving, "WATCHING" each time a watch's answer head is in (a
// 200; any other status ends the process), then "STEP <n>" after each change on stdout, and
// "new node set stored" after each change on stderr (the lines the bench counts for the fake and
// the gateway). SIGINT or SIGTERM stops it.
//
// Usage: floor_balancer --ips FILE --port P --nodes N --slice S [--interval-ms MS] [--listen PORT]
//                      [--watch-port P]
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "floor_net.h"

namespace {

using floor_net::Die;
using floor_net::Loopback;
using floor_net::NoDelay;

constexpr size_t kBuf = 8192;

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "floor_balancer: %s\nusage: floor_balancer --ips FILE --port P --nodes N --slice S"
               " [--interval-ms MS] [--listen PORT] [--watch-port P]\n",
               why);
  exit(2);
}

// The length of the complete message at the start of `s`, or 0: a request head (no body), or an
// answer head plus its Content-Length body.
size_t MessageLength(std::string_view s, bool request) {
  const size_t end = s.find("\r\n\r\n");
  if (end == std::string_view::npos) return 0;
  if (request) return end + 4;
  size_t body = 0;
  for (size_t line = s.find("\r\n") + 2; line < end;) {
    const size_t next = s.find("\r\n", line);
    const std::string_view field = s.substr(line, next - line);
    if (field.size() > 15 && strncasecmp(field.data(), "content-length:", 15) == 0) {
      body = 0;
      for (char c : field.substr(15)) {
        if (c >= '0' && c <= '9') body = body * 10 + static_cast<size_t>(c - '0');
      }
    }
    line = next + 2;
  }
  return end + 4 + body <= s.size() ? end + 4 + body : 0;
}

// Reads what `fd` has into buf[*len..kBuf): kMore (read some), kNothing (would block), or
// kClosed (end of stream, an error, or a full buffer: a message larger than it).
enum class Read : uint8_t { kMore, kNothing, kClosed };
Read ReadMore(int fd, char* buf, size_t* len) {
  const ssize_t r = read(fd, buf + *len, kBuf - *len);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) || *len == kBuf) return Read::kClosed;
  if (r < 0) return Read::kNothing;
  *len += static_cast<size_t>(r);
  return Read::kMore;
}

enum class Kind : uint8_t { kListener, kTimer, kClient, kUpstream };

struct Conn {
  Kind kind;
  int fd = -1;
};

struct Upstream;

struct Client : Conn {
  Client() { kind = Kind::kClient; }
  Upstream* upstream = nullptr;  // while a request is at the upstream
  size_t request_len = 0;        // the request being forwarded (at the start of `in`)
  size_t in_len = 0;
  size_t out_len = 0;  // the answer read so far (from the upstream)
  char in[kBuf];
  char out[kBuf];
};

struct Upstream : Conn {
  Upstream() { kind = Kind::kUpstream; }
  uint32_t address = 0;      // index into the address list
  Client* client = nullptr;  // while busy
  bool connecting = false;
};

class Balancer {
 public:
  Balancer(std::vector<sockaddr_in> addresses, size_t nodes, size_t slice, int interval_ms,
           int listen_port)
      : addresses_(std::move(addresses)), slice_(slice), idle_(addresses_.size()) {
    const size_t blocks = addresses_.size() / slice;
    const size_t slices = nodes / slice;
    block_of_.resize(slices);
    for (size_t i = 0; i < slices; ++i) block_of_[i] = i;
    for (size_t b = slices; b < blocks; ++b) spare_.push_back(b);
    set_.resize(slices * slice);
    for (size_t i = 0; i < set_.size(); ++i) set_[i] = static_cast<uint32_t>(i);

    ep_ = epoll_create1(0);
    listener_.kind = Kind::kListener;
    listener_.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listener_.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = Loopback(listen_port);
    if (bind(listener_.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("bind");
    if (listen(listener_.fd, 4096) != 0) Die("listen");
    socklen_t len = sizeof a;
    getsockname(listener_.fd, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    Watch(&listener_, EPOLLIN, EPOLL_CTL_ADD);
    if (interval_ms > 0) {
      if (spare_.empty()) Usage("--ips holds too few addresses (nodes, plus one spare block)");
      timer_.kind = Kind::kTimer;
      timer_.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
      itimerspec t{};
      t.it_interval.tv_sec = interval_ms / 1000;
      t.it_interval.tv_nsec = (interval_ms % 1000) * 1000000L;
      t.it_value = t.it_interval;
      timerfd_settime(timer_.fd, 0, &t, nullptr);
      Watch(&timer_, EPOLLIN, EPOLL_CTL_ADD);
    }
  }

  int port() const { return port_; }

  [[noreturn]] void Run() {
    epoll_event events[1024];
    for (;;) {
      const int n = epoll_wait(ep_, events, 1024, -1);
      for (int i = 0; i < n; ++i) {
        auto* c = static_cast<Conn*>(events[i].data.ptr);
        if (c->fd < 0) continue;  // closed earlier in this turn (freed after it)
        switch (c->kind) {
          case Kind::kListener: Accept(); break;
          case Kind::kTimer: Rotate(); break;
          case Kind::kClient: OnClient(static_cast<Client*>(c)); break;
          case Kind::kUpstream: OnUpstream(static_cast<Upstream*>(c), events[i].events); break;
        }
      }
      FlushSends();
      for (Client* c : dead_) delete c;  // after the turn: later events may name it
      dead_.clear();
      for (Upstream* u : dead_upstreams_) delete u;
      dead_upstreams_.clear();
    }
  }

 private:
  void Watch(Conn* c, uint32_t events, int op) {
    epoll_event e{};
    e.events = events;
    e.data.ptr = c;
    epoll_ctl(ep_, op, c->fd, &e);
  }

  void Accept() {
    for (int fd; (fd = accept4(listener_.fd, nullptr, nullptr, SOCK_NONBLOCK)) >= 0;) {
      NoDelay(fd);
      auto* c = new Client;
      c->fd = fd;
      Watch(c, EPOLLIN, EPOLL_CTL_ADD);
    }
  }

  // One change: the next slice in turn takes the spare block that waited longest.
  void Rotate() {
    uint64_t expirations = 0;
    if (read(timer_.fd, &expirations, sizeof expirations) <= 0) return;
    const size_t index = step_ % block_of_.size();
    spare_.push_back(block_of_[index]);
    block_of_[index] = spare_.front();
    spare_.pop_front();
    for (size_t i = 0; i < slice_; ++i) {
      set_[index * slice_ + i] = static_cast<uint32_t>(block_of_[index] * slice_ + i);
    }
    ++step_;
    std::printf("STEP %llu\n", static_cast<unsigned long long>(step_));
    std::fflush(stdout);
    std::fprintf(stderr, "new node set stored (step %llu)\n", static_cast<unsigned long long>(step_));
  }

  void CloseClient(Client* c) {
    if (c->fd < 0) return;
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    close(c->fd);
    c->fd = -1;
    if (c->upstream != nullptr) CloseUpstream(c->upstream);  // its answer is not wanted
    dead_.push_back(c);
  }

  // Closes an upstream connection that is not on an idle stack; freed after the turn, as a
  // client is (an event later in this turn may name it: wrk closing a connection whose answer
  // is in).
  void CloseUpstream(Upstream* u) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, u->fd, nullptr);
    close(u->fd);
    u->fd = -1;
    if (u->client != nullptr) u->client->upstream = nullptr;
    u->client = nullptr;
    dead_upstreams_.push_back(u);
  }

  void OnClient(Client* c) {
    const Read r = ReadMore(c->fd, c->in, &c->in_len);
    if (r == Read::kClosed) {
      CloseClient(c);
      return;
    }
    if (r == Read::kNothing) return;
    if (c->upstream != nullptr) return;  // one request at a time (wrk does not pipeline)
    c->request_len = MessageLength(std::string_view(c->in, c->in_len), true);
    if (c->request_len == 0) return;
    const uint32_t address = set_[next_++ % set_.size()];
    Upstream* u = nullptr;
    if (!idle_[address].empty()) {
      u = idle_[address].back();
      idle_[address].pop_back();
    } else {
      u = Connect(address);
      if (u == nullptr) {
        CloseClient(c);
        return;
      }
    }
    u->client = c;
    c->upstream = u;
    c->out_len = 0;
    if (!u->connecting) SendRequest(u);
  }

  Upstream* Connect(uint32_t address) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) return nullptr;
    NoDelay(fd);
    auto* u = new Upstream;
    u->fd = fd;
    u->address = address;
    const sockaddr_in& a = addresses_[address];
    if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      if (errno != EINPROGRESS) {
        close(fd);
        delete u;
        return nullptr;
      }
      u->connecting = true;
      Watch(u, EPOLLOUT, EPOLL_CTL_ADD);
      return u;
    }
    Watch(u, EPOLLIN, EPOLL_CTL_ADD);
    return u;
  }

  // A request or an answer goes out after the turn's last event, with the turn's other sends,
  // as Turnpike's WriteBatch sends them (and floor_proxy's epollbatch).
  void SendRequest(Upstream* u) { pending_.push_back({u->client, true, u->client->request_len}); }

  void FlushSends() {
    for (const Pending& p : pending_) {
      Client* c = p.client;
      if (c->fd < 0) continue;  // closed later in the turn
      const int to = p.request ? c->upstream->fd : c->fd;
      if (send(to, p.request ? c->in : c->out, p.len, MSG_NOSIGNAL) != static_cast<ssize_t>(p.len)) {
        CloseClient(c);  // closes its upstream too
        continue;
      }
      if (p.request) {
        std::memmove(c->in, c->in + p.len, c->in_len - p.len);
        c->in_len -= p.len;
        c->request_len = 0;
      } else {
        c->out_len = 0;
        if (c->in_len > 0) OnClientBuffered(c);
      }
    }
    pending_.clear();
  }

  void OnUpstream(Upstream* u, uint32_t events) {
    if (u->connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) {
        Client* c = u->client;
        CloseClient(c);
        return;
      }
      u->connecting = false;
      Watch(u, EPOLLIN, EPOLL_CTL_MOD);
      SendRequest(u);
      return;
    }
    Client* c = u->client;
    if (c == nullptr) {  // idle: the backend closed it (or sent what nobody asked for)
      auto& stack = idle_[u->address];
      for (size_t i = 0; i < stack.size(); ++i) {
        if (stack[i] == u) {
          stack[i] = stack.back();
          stack.pop_back();
          break;
        }
      }
      CloseUpstream(u);
      return;
    }
    const Read r = ReadMore(u->fd, c->out, &c->out_len);
    if (r == Read::kClosed) {
      CloseClient(c);
      return;
    }
    if (r == Read::kNothing) return;
    const size_t m = MessageLength(std::string_view(c->out, c->out_len), false);
    if (m == 0) return;
    // The answer is complete: the connection goes back to its address's stack, the answer on.
    u->client = nullptr;
    c->upstream = nullptr;
    idle_[u->address].push_back(u);
    pending_.push_back({c, false, m});
  }

  // A request that came in while the last one was at the upstream (not wrk's traffic).
  void OnClientBuffered(Client* c) {
    c->request_len = MessageLength(std::string_view(c->in, c->in_len), true);
    if (c->request_len != 0) CloseClient(c);  // pipelining is not this bench's traffic
  }

  std::vector<sockaddr_in> addresses_;
  size_t slice_;
  std::vector<std::vector<Upstream*>> idle_;  // per address
  std::vector<size_t> block_of_;              // per slice
  std::deque<size_t> spare_;                  // the blocks that wait, longest first
  std::vector<uint32_t> set_;                 // address indices, slice by slice
  uint64_t next_ = 0;                         // the round robin's position
  uint64_t step_ = 0;
  int ep_ = -1;
  int port_ = 0;
  Conn listener_{};
  Conn timer_{};
  std::vector<Client*> dead_;
  std::vector<Upstream*> dead_upstreams_;
  struct Pending {
    Client* client;
    bool request;  // to the client's upstream; else the answer to the client
    size_t len;
  };
  std::vector<Pending> pending_;  // the turn's sends, in the order they were made
};

// Holds the watch open for good, discarding what it reads (--watch-port): one blocking socket,
// read in 64 KB pieces; a connect that fails or a stream that ends is retried after 100 ms.
[[noreturn]] void DiscardWatch(int port) {
  static const char kRequest[] =
      "GET /apis/discovery.k8s.io/v1/endpointslices?watch=true&allowWatchBookmarks=true"
      "&timeoutSeconds=3600 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer churn\r\n"
      "Accept: application/json\r\n\r\n";
  static char buf[65536];
  const sockaddr_in to = Loopback(port);
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) Die("socket");
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 &&
        send(fd, kRequest, sizeof kRequest - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof kRequest - 1)) {
      std::string head;  // until its blank line: each answer's status is checked
      bool checked = false;
      for (ssize_t r; (r = read(fd, buf, sizeof buf)) != 0;) {
        if (r < 0) {
          if (errno == EINTR) continue;
          break;
        }
        if (checked) continue;
        head.append(buf, static_cast<size_t>(r));
        if (head.find("\r\n\r\n") == std::string::npos) continue;
        if (head.compare(0, 12, "HTTP/1.1 200") != 0) {
          std::fprintf(stderr, "floor_balancer: the watch was answered %.*s\n",
                       static_cast<int>(head.find("\r\n")), head.c_str());
          exit(1);
        }
        checked = true;
        std::printf("WATCHING\n");
        std::fflush(stdout);
      }
      std::fprintf(stderr, "floor_balancer: the watch ended; watching again\n");
    }
    close(fd);
    usleep(100 * 1000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string ips_file;
  long port = 0, nodes = 0, slice = 0, interval_ms = 0, listen_port = 0, watch_port = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) Usage("every option takes a value");
    const char* value = argv[++i];
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    const bool number = end != value && *end == '\0' && n >= 0;
    if (arg == "--ips") {
      ips_file = value;
      continue;
    }
    if (!number) Usage("option values must be whole numbers");
    if (arg == "--port") port = n;
    else if (arg == "--nodes") nodes = n;
    else if (arg == "--slice") slice = n;
    else if (arg == "--interval-ms") interval_ms = n;
    else if (arg == "--listen") listen_port = n;
    else if (arg == "--watch-port") watch_port = n;
    else Usage("unknown option");
  }
  if (ips_file.empty() || port <= 0 || port > 65535 || nodes <= 0 || slice <= 0 || nodes % slice != 0)
    Usage("--ips, --port, --nodes and --slice are needed; --nodes a multiple of --slice");
  if (watch_port > 65535) Usage("--watch-port must be a port");
  std::vector<sockaddr_in> addresses;
  std::ifstream in(ips_file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, line.c_str(), &a.sin_addr) != 1) Usage("--ips holds a line that is no IPv4 address");
    addresses.push_back(a);
  }
  if (addresses.size() < static_cast<size_t>(nodes) || addresses.size() % static_cast<size_t>(slice) != 0)
    Usage("--ips holds fewer than --nodes addresses, or not a multiple of --slice");
  Balancer balancer(std::move(addresses), static_cast<size_t>(nodes), static_cast<size_t>(slice),
                    static_cast<int>(interval_ms), static_cast<int>(listen_port));
  std::printf("LISTENING %d\n", balancer.port());
  std::fflush(stdout);
  std::thread worker([&balancer] { balancer.Run(); });
  if (watch_port > 0) DiscardWatch(static_cast<int>(watch_port));
  worker.join();
}
