#include "discovery/node_source.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace turnpike::discovery {
namespace {

void SetPort(uint16_t port, upstream::Node* node) {
  if (node->addr.family() == AF_INET) {
    node->addr.v4.sin_port = htons(port);
  } else if (node->addr.family() == AF_INET6) {
    node->addr.v6.sin6_port = htons(port);
  }
}

}  // namespace

bool ParseIpLiteral(const std::string& host, uint16_t port, upstream::Node* node) {
  node->addr = {};
  auto* v4 = &node->addr.v4;
  auto* v6 = &node->addr.v6;
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    node->addr_len = sizeof(sockaddr_in);
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    node->addr_len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

void SetAddress(const sockaddr* addr, socklen_t len, uint16_t port, upstream::Node* node) {
  node->addr = {};
  len = std::min<socklen_t>(len, sizeof(node->addr));
  std::memcpy(&node->addr, addr, len);
  node->addr_len = len;
  SetPort(port, node);
}

void FinishNode(const DiscoveredNode& from, upstream::Node* node) {
  node->host = from.host;
  node->port = static_cast<uint16_t>(from.port == 0 ? kDefaultPort : from.port);
  node->weight = from.weight;
  node->priority = from.priority;
  // Written by hand rather than by inet_ntop and string concatenations: a discovered set is
  // rebuilt whole for every change (10k nodes every 100 ms under churn, on the control
  // thread), and glibc's inet_ntop for IPv4 goes through sprintf.
  char text[INET6_ADDRSTRLEN] = {};
  size_t len = 0;
  if (node->addr.family() == AF_INET) {
    const auto* b = reinterpret_cast<const unsigned char*>(&node->addr.v4.sin_addr);
    char* p = text;
    for (int i = 0; i < 4; ++i) {
      if (b[i] >= 100) *p++ = static_cast<char>('0' + b[i] / 100);
      if (b[i] >= 10) *p++ = static_cast<char>('0' + b[i] / 10 % 10);
      *p++ = static_cast<char>('0' + b[i] % 10);
      *p++ = '.';
    }
    len = static_cast<size_t>(p - text) - 1;  // without the last '.'
  } else if (node->addr.family() == AF_INET6 &&
             inet_ntop(AF_INET6, &node->addr.v6.sin6_addr, text, sizeof(text)) != nullptr) {
    len = std::strlen(text);
  }
  node->ip_text.assign(std::string_view(text, len));
  // `host[:port]`, brackets around an IPv6 literal; on the stack unless the name is long.
  const std::string& host = from.host;
  const bool v6 = host.find(':') != std::string::npos;
  char port[8];
  size_t port_len = 0;
  if (node->port != 80) {
    port[0] = ':';
    port_len =
        static_cast<size_t>(std::to_chars(port + 1, port + sizeof(port), node->port).ptr - port);
  }
  const size_t total = host.size() + (v6 ? 2 : 0) + port_len;
  char small[64];
  std::string large;
  char* h = small;
  if (total > sizeof(small)) {
    large.resize(total);
    h = large.data();
  }
  char* p = h;
  if (v6) *p++ = '[';
  std::memcpy(p, host.data(), host.size());
  p += host.size();
  if (v6) *p++ = ']';
  if (port_len != 0) std::memcpy(p, port, port_len);
  node->host_header.assign(std::string_view(h, total));
}

}  // namespace turnpike::discovery
