#include "discovery/node_source.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace turnpike::discovery {
namespace {

void SetPort(uint16_t port, upstream::Node* node) {
  if (node->addr.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&node->addr)->sin_port = htons(port);
  } else if (node->addr.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&node->addr)->sin6_port = htons(port);
  }
}

}  // namespace

bool ParseIpLiteral(const std::string& host, uint16_t port, upstream::Node* node) {
  auto* v4 = reinterpret_cast<sockaddr_in*>(&node->addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&node->addr);
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
  std::memcpy(&node->addr, addr, std::min<size_t>(len, sizeof(node->addr)));
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
  if (node->addr.ss_family == AF_INET) {
    const auto* b = reinterpret_cast<const unsigned char*>(
        &reinterpret_cast<const sockaddr_in*>(&node->addr)->sin_addr);
    char* p = text;
    for (int i = 0; i < 4; ++i) {
      if (b[i] >= 100) *p++ = static_cast<char>('0' + b[i] / 100);
      if (b[i] >= 10) *p++ = static_cast<char>('0' + b[i] / 10 % 10);
      *p++ = static_cast<char>('0' + b[i] % 10);
      *p++ = '.';
    }
    len = static_cast<size_t>(p - text) - 1;  // without the last '.'
  } else if (node->addr.ss_family == AF_INET6 &&
             inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&node->addr)->sin6_addr,
                       text, sizeof(text)) != nullptr) {
    len = std::strlen(text);
  }
  node->ip_text.assign(text, len);
  const bool v6 = node->host.find(':') != std::string::npos;
  std::string& h = node->host_header;
  h.clear();
  h.reserve(node->host.size() + 8);
  if (v6) h += '[';
  h += node->host;
  if (v6) h += ']';
  if (node->port != 80) {
    char port[8];
    h += ':';
    h.append(port,
             static_cast<size_t>(std::to_chars(port, port + sizeof(port), node->port).ptr - port));
  }
}

}  // namespace turnpike::discovery
