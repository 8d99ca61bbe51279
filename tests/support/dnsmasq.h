// A real DNS server for tests: dnsmasq (Debian's dnsmasq-base: the binary, no system service) on
// 127.0.0.1 and a free port, answering only from the records the test gives it (no upstream
// servers, no hosts file, no negative caching) and authoritative for `.test`, so other names there
// get NXDOMAIN or no data rather than REFUSED. Records are dnsmasq config lines, written to a file
// of the object's own:
//   "host-record=a.test,127.0.0.2\n"                    A (AAAA for an IPv6 address)
//   "srv-host=_http._tcp.svc.test,a.test,8080,10,5\n"   SRV: target, port, priority, weight
// Every answer's TTL is Start()'s `ttl` (dnsmasq's local-ttl). SetRecords() rewrites the file and
// restarts the server on the same port (dnsmasq rereads only hosts files on SIGHUP); Kill() stops
// it (SIGKILL), as a DNS server going away. Killed by PID with the object.
#pragma once

#include <memory>
#include <string>

#include "support/process.h"

namespace turnpike::testing {

class DnsServer {
 public:
  // Picks a free port; Start() runs the server on it.
  DnsServer();
  ~DnsServer();

  // Starts dnsmasq with `records`, answers with TTL `ttl` seconds, and waits until it answers a
  // query. False with error() when it could not.
  bool Start(const std::string& records, int ttl = 1);
  // Replaces the records: kill, rewrite, start again on the same port.
  bool SetRecords(const std::string& records);
  void Kill();

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& error() const { return error_; }

  // Whether dnsmasq is installed (tests skip, saying so, when it is not).
  static bool Available();

 private:
  bool Answers() const;  // one UDP query answered within 100 ms

  int port_ = 0;
  int ttl_ = 1;
  std::string conf_;  // removed with the object
  std::string error_;
  std::unique_ptr<Process> process_;
};

}  // namespace turnpike::testing
