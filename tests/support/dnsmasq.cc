#include "support/dnsmasq.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "support/net.h"

namespace turnpike::testing {
namespace {

constexpr const char* kDnsmasq = "/usr/sbin/dnsmasq";

}  // namespace

DnsServer::DnsServer()
    : port_(FreePort()),
      conf_("/tmp/turnpike-dnsmasq-" + std::to_string(getpid()) + "-" + std::to_string(port_) +
            ".conf") {}

DnsServer::~DnsServer() {
  Kill();
  std::remove(conf_.c_str());
}

bool DnsServer::Available() { return access(kDnsmasq, X_OK) == 0; }

bool DnsServer::Start(const std::string& records, int ttl) {
  ttl_ = ttl;
  return SetRecords(records);
}

bool DnsServer::SetRecords(const std::string& records) {
  Kill();
  if (port_ == 0) {
    error_ = "no free port";
    return false;
  }
  FILE* f = std::fopen(conf_.c_str(), "w");
  if (f == nullptr) {
    error_ = "cannot write " + conf_;
    return false;
  }
  std::fprintf(f,
               "port=%d\nlisten-address=127.0.0.1\nbind-interfaces\nno-"
               "resolv\nno-hosts\n"
               "no-poll\nno-negcache\nlocal=/test/"
               "\npid-file=\nlocal-ttl=%d\nlog-facility=-\n%s",
               port_, ttl_, records.c_str());
  std::fclose(f);
  ProcessOptions options;
  options.stdout_file = "/dev/null";
  options.stderr_file = "/dev/null";
  process_ =
      Process::Start(kDnsmasq, {"--keep-in-foreground", "--conf-file=" + conf_}, options, &error_);
  if (process_ == nullptr) return false;
  for (int i = 0; i < 200; ++i) {
    if (Answers()) return true;
    if (!process_->Running()) {
      error_ = "dnsmasq exited: " + process_->exit_status()->ToString();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  error_ = "dnsmasq did not answer within 5 s";
  return false;
}

void DnsServer::Kill() {
  if (process_ == nullptr) return;
  process_->Signal(SIGKILL);
  process_->Wait(std::chrono::seconds(5));
  process_.reset();
}

bool DnsServer::Answers() const {
  // A query for "probe.test" A: any answer (NXDOMAIN included) means the server is up.
  std::vector<unsigned char> q = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (const char* label : {"probe", "test"}) {
    q.push_back(static_cast<unsigned char>(std::char_traits<char>::length(label)));
    for (const char* c = label; *c != 0; ++c) q.push_back(static_cast<unsigned char>(*c));
  }
  q.insert(q.end(), {0, 0, 1, 0, 1});
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port_));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (sendto(fd, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)) ==
      static_cast<ssize_t>(q.size())) {
    pollfd p{fd, POLLIN, 0};
    unsigned char buf[512];
    ok = poll(&p, 1, 100) == 1 && recv(fd, buf, sizeof(buf), 0) >= 12;
  }
  close(fd);
  return ok;
}

}  // namespace turnpike::testing
