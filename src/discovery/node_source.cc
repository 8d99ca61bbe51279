#include "discovery/node_source.h"

#include <arpa/inet.h>
#include <netinet/in.h>

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
  char text[INET6_ADDRSTRLEN] = {};
  const void* src =
      node->addr.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&node->addr)->sin6_addr)
          : &reinterpret_cast<const sockaddr_in*>(&node->addr)->sin_addr;
  if (inet_ntop(node->addr.ss_family, src, text, sizeof(text)) != nullptr) node->ip_text = text;
  bool v6 = node->host.find(':') != std::string::npos;
  node->host_header = v6 ? "[" + node->host + "]" : node->host;
  if (node->port != 80) node->host_header += ":" + std::to_string(node->port);
}

}  // namespace turnpike::discovery
