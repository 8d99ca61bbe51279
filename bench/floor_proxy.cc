// floor_proxy: the least an HTTP/1.1 keep-alive proxy can do per request, for bench/compare.sh's
// `floor-*` proxies: how much of a proxied request's CPU the kernel path takes on this machine
// whatever the proxy does in user space, and whether another I/O model would lower it.
//
// One thread. Each client connection gets its own upstream connection (opened when the client
// connects, kept for its life). A request head (GET without a body) is forwarded as received
// once its blank line is in; an answer (head + Content-Length body) is forwarded as received
// once complete. No parsing beyond that, no header added, no allocation per request. One
// message in flight per connection (wrk does not pipeline); bytes after a complete message stay
// buffered. A send that does not take the whole message at once closes both connections (with
// heads of a few hundred bytes on loopback it never happens); so does any error or close.
//
// Models (MODE):
//   epoll    level-triggered epoll, read(2), send(2): libuv's way, so Turnpike's today
//   epollet  edge-triggered epoll, recv(2) until a short read, send(2): nginx's way
//   epollbatch  as epoll, but every message read in a loop turn is sent after the turn's last
//            event (h2o's way): a turn's sends leave together, so a peer that sleeps is woken
//            once for them rather than once per send
//   uring    io_uring (single issuer, deferred task work): every recv and send is an SQE, a
//            recv re-armed after each message (linked after the send that forwards it), one
//            io_uring_enter per loop turn submitting them and waiting for completions.
//            Built only where liburing is (apt-get install liburing-dev; not a dependency of
//            the gateway).
//
// Usage: floor_proxy MODE LISTEN_PORT UPSTREAM_PORT   (both on 127.0.0.1)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#ifdef TURNPIKE_FLOOR_URING
#include <liburing.h>
#endif

#include "floor_net.h"

namespace {

using floor_net::Die;
using floor_net::Loopback;
using floor_net::NoDelay;

constexpr size_t kBuf = 16384;

struct Pair;

// One direction of a connection pair: bytes read from `from`, forwarded to `to`.
struct Side {
  Pair* pair = nullptr;
  bool request = false;  // client -> upstream
  int from = -1;
  int to = -1;
  size_t len = 0;
  char buf[kBuf];
};

struct Pair {
  Side client;       // client -> upstream (requests)
  Side upstream;     // upstream -> client (answers)
  int inflight = 0;  // io_uring: operations not completed yet
  bool dead = false;
};

int Listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Loopback(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) Die("bind");
  if (listen(fd, 4096) != 0) Die("listen");
  return fd;
}

// A blocking connect (loopback, once per client connection), then non-blocking.
int ConnectUpstream(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  NoDelay(fd);
  return fd;
}

Pair* NewPair(int cfd, int upstream_port) {
  int ufd = ConnectUpstream(upstream_port);
  if (ufd < 0) {
    close(cfd);
    return nullptr;
  }
  NoDelay(cfd);
  auto* p = new Pair;
  p->client.pair = p->upstream.pair = p;
  p->client.request = true;
  p->client.from = p->upstream.to = cfd;
  p->upstream.from = p->client.to = ufd;
  return p;
}

// The length of the complete message at the start of a side's buffer, or 0: a request head
// (no body), or an answer head plus its Content-Length body.
size_t MessageLength(const Side& side) {
  std::string_view s(side.buf, side.len);
  const size_t end = s.find("\r\n\r\n");
  if (end == std::string_view::npos) return 0;
  if (side.request) return end + 4;
  size_t body = 0;
  for (size_t line = s.find("\r\n") + 2; line < end;) {
    const size_t next = s.find("\r\n", line);
    std::string_view field = s.substr(line, next - line);
    if (field.size() > 15 && strncasecmp(field.data(), "content-length:", 15) == 0) {
      body = strtoul(std::string(field.substr(15)).c_str(), nullptr, 10);
    }
    line = next + 2;
  }
  return end + 4 + body <= side.len ? end + 4 + body : 0;
}

// Drops the first `n` bytes of a side's buffer (the message just forwarded).
void Consume(Side& side, size_t n) {
  std::memmove(side.buf, side.buf + n, side.len - n);
  side.len -= n;
}

// ---- epoll ----------------------------------------------------------------------------------------
int RunEpoll(bool edge, bool batch, int lfd, int upstream_port) {
  const int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listening socket
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  epoll_event events[1024];
  auto close_pair = [&](Pair* p) {
    epoll_ctl(ep, EPOLL_CTL_DEL, p->client.from, nullptr);
    epoll_ctl(ep, EPOLL_CTL_DEL, p->upstream.from, nullptr);
    close(p->client.from);
    close(p->upstream.from);
    p->dead = true;
  };
  // Sends the complete message of `m` bytes at the start of the side's buffer; false when the
  // kernel did not take all of it (the pair is then closed).
  auto forward = [](Side& side, size_t m) {
    if (send(side.to, side.buf, m, MSG_NOSIGNAL) != static_cast<ssize_t>(m)) return false;
    Consume(side, m);
    return true;
  };
  std::vector<Pair*> dead;
  std::vector<std::pair<Side*, size_t>> pending;  // batch: the turn's messages, sent after it
  for (;;) {
    const int n = epoll_wait(ep, events, 1024, -1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        for (int cfd; (cfd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK)) >= 0;) {
          Pair* p = NewPair(cfd, upstream_port);
          if (p == nullptr) continue;
          epoll_event e{};
          e.events = EPOLLIN | (edge ? EPOLLET | EPOLLRDHUP : 0);
          e.data.ptr = &p->client;
          epoll_ctl(ep, EPOLL_CTL_ADD, p->client.from, &e);
          e.data.ptr = &p->upstream;
          epoll_ctl(ep, EPOLL_CTL_ADD, p->upstream.from, &e);
        }
        continue;
      }
      Side* side = static_cast<Side*>(events[i].data.ptr);
      Pair* p = side->pair;
      if (p->dead) continue;
      bool closed = false;
      for (;;) {
        const size_t room = kBuf - side->len;
        if (room == 0) {
          closed = true;  // a message larger than the buffer: not this bench's traffic
          break;
        }
        const ssize_t r = edge ? recv(side->from, side->buf + side->len, room, 0)
                               : read(side->from, side->buf + side->len, room);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
          closed = true;
          break;
        }
        if (r < 0) break;  // drained
        side->len += static_cast<size_t>(r);
        // Level-triggered: one read per event (the next epoll_wait reports what is left).
        // Edge-triggered: a short read means the socket is drained, as nginx assumes.
        if (!edge || static_cast<size_t>(r) < room) break;
      }
      const size_t m = closed ? 0 : MessageLength(*side);
      if (m != 0 && batch) {
        pending.emplace_back(side, m);
      } else if (m != 0) {
        closed = !forward(*side, m);
      }
      if (closed) {
        close_pair(p);
        dead.push_back(p);
      }
    }
    for (auto [side, m] : pending) {
      if (!side->pair->dead && !forward(*side, m)) {
        close_pair(side->pair);
        dead.push_back(side->pair);
      }
    }
    pending.clear();
    for (Pair* p : dead) delete p;  // after the batch: later events may name it
    dead.clear();
  }
}

// ---- io_uring -------------------------------------------------------------------------------------
#ifdef TURNPIKE_FLOOR_URING
enum Op : uint64_t { kAccept = 0, kRecvRequest = 1, kRecvAnswer = 2, kSend = 3 };

uint64_t Tag(Pair* p, Op op) { return reinterpret_cast<uint64_t>(p) | op; }

int RunUring(int lfd, int upstream_port) {
  io_uring ring;
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL;
  if (int e = io_uring_queue_init_params(4096, &ring, &params); e != 0) {
    errno = -e;
    Die("io_uring_queue_init_params");
  }
  int flags = fcntl(lfd, F_GETFL);
  fcntl(lfd, F_SETFL, flags & ~O_NONBLOCK);
  auto get_sqe = [&]() {
    io_uring_sqe* s = io_uring_get_sqe(&ring);
    if (s == nullptr) {
      io_uring_submit(&ring);
      s = io_uring_get_sqe(&ring);
    }
    return s;
  };
  auto arm_accept = [&]() {
    io_uring_sqe* s = get_sqe();
    io_uring_prep_accept(s, lfd, nullptr, nullptr, 0);
    io_uring_sqe_set_data64(s, kAccept);
  };
  auto arm_recv = [&](Pair* p, bool request) {
    Side& side = request ? p->client : p->upstream;
    io_uring_sqe* s = get_sqe();
    io_uring_prep_recv(s, side.from, side.buf + side.len, kBuf - side.len, 0);
    io_uring_sqe_set_data64(s, Tag(p, request ? kRecvRequest : kRecvAnswer));
    ++p->inflight;
  };
  auto kill = [&](Pair* p) {
    if (!p->dead) {
      p->dead = true;
      shutdown(p->client.from, SHUT_RDWR);  // completes the recvs still armed
      shutdown(p->upstream.from, SHUT_RDWR);
    }
    if (p->inflight == 0) {
      close(p->client.from);
      close(p->upstream.from);
      delete p;
    }
  };
  arm_accept();
  for (;;) {
    io_uring_submit_and_wait(&ring, 1);
    io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      const uint64_t data = cqe->user_data;
      const int res = cqe->res;
      if (data == kAccept) {
        arm_accept();
        if (res < 0) continue;
        if (Pair* p = NewPair(res, upstream_port)) {
          arm_recv(p, true);
          arm_recv(p, false);
        }
        continue;
      }
      Pair* p = reinterpret_cast<Pair*>(data & ~uint64_t{3});
      const Op op = static_cast<Op>(data & 3);
      --p->inflight;
      if (p->dead) {
        kill(p);
        continue;
      }
      if (op == kSend) {
        if (res < 0) kill(p);  // a short send shows as the linked recv's -ECANCELED
        continue;
      }
      if (res <= 0) {
        kill(p);
        continue;
      }
      const bool request = op == kRecvRequest;
      Side& side = request ? p->client : p->upstream;
      side.len += static_cast<size_t>(res);
      if (const size_t m = MessageLength(side); m != 0) {
        // Forward in place; the recv that reuses the buffer is linked after the send, so it
        // starts only once the send took every byte (a short send fails the link).
        io_uring_sqe* s = get_sqe();
        io_uring_prep_send(s, side.to, side.buf, m, MSG_NOSIGNAL | MSG_WAITALL);
        io_uring_sqe_set_data64(s, Tag(p, kSend));
        s->flags |= IOSQE_IO_LINK;
        ++p->inflight;
        side.len -= m;  // one message in flight: nothing follows it in the buffer
      } else if (side.len == kBuf) {
        kill(p);
        continue;
      }
      arm_recv(p, request);
    }
    io_uring_cq_advance(&ring, seen);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: floor_proxy epoll|epollet|epollbatch|uring LISTEN_PORT UPSTREAM_PORT\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const std::string_view mode = argv[1];
  const int listen_port = atoi(argv[2]);
  const int upstream_port = atoi(argv[3]);
  if (mode == "uring") {
#ifdef TURNPIKE_FLOOR_URING
    return RunUring(Listen(listen_port), upstream_port);
#else
    fprintf(stderr, "floor_proxy: built without liburing (apt-get install liburing-dev, rebuild)\n");
    return 2;
#endif
  }
  if (mode != "epoll" && mode != "epollet" && mode != "epollbatch") {
    fprintf(stderr, "floor_proxy: unknown mode '%s'\n", argv[1]);
    return 2;
  }
  return RunEpoll(mode == "epollet", mode == "epollbatch", Listen(listen_port), upstream_port);
}
