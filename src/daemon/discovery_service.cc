#include "daemon/discovery_service.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace turnpike::daemon {

Status DiscoveryService::Start(uv_loop_t* loop) {
  resolver_ = std::make_unique<discovery::AresResolver>(loop);
  if (Status s = resolver_->Start(); !s.ok()) {
    // Not fatal: upstreams with IP-literal nodes work; domain names fail to resolve (503).
    spdlog::error("{}; domain names in upstream nodes will not resolve", s.message());
  }
  directory_ = std::make_unique<discovery::Directory>(loop, resolver_.get());
  // One provider per `discovery:` entry of config.yaml (APISIX loads a module per key), and
  // none for the others: an upstream naming one of those is a config error at build.
  for (const auto& [name, conf] : discovery_) {
    const DiscoveryProviderFactory* factory = providers_->Find(name);
    if (factory == nullptr) return Status::Error("discovery." + name + ": unknown discovery type");
    StatusOr<std::unique_ptr<DiscoveryProvider>> p = factory->Create(conf);
    if (!p.ok()) return Status::Error("discovery." + name + ": " + p.status().message());
    by_name_[name] = p.value().get();
    directory_->AddProvider(name, std::move(p).value());
  }
  return directory_->Start();
}

void DiscoveryService::Stop() {
  if (directory_) directory_->Stop();
  if (resolver_) resolver_->Stop();
}

void DiscoveryService::Apply(std::vector<discovery::Binding> bindings) {
  if (directory_) directory_->Apply(std::move(bindings));
}

std::optional<nlohmann::json> DiscoveryService::Dump(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second->Dump();
}

std::optional<admin::HttpAnswer> DiscoveryService::ShowDumpFile(std::string_view name) const {
  if (name != "consul" || by_name_.find(name) == by_name_.end()) return std::nullopt;
  const nlohmann::json* path = nullptr;
  for (const auto& [n, conf] : discovery_) {
    if (n != name || !conf.is_object()) continue;
    auto dump = conf.find("dump");
    if (dump != conf.end() && dump->is_object()) {
      auto p = dump->find("path");
      if (p != dump->end() && p->is_string()) path = &*p;
    }
  }
  if (path == nullptr) return admin::HttpAnswer{503, "text/plain", "dump params is nil"};
  // A local file of a few kilobytes, asked for by an operator: read here rather than through
  // the thread pool.
  std::string file = path->get<std::string>();
  std::unique_ptr<FILE, int (*)(FILE*)> fp(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!fp) return admin::HttpAnswer{503, "text/plain", file + ": " + std::strerror(errno)};
  std::string text;
  char buf[65536];
  size_t n;
  while (text.size() <= kMaxDumpFile && (n = std::fread(buf, 1, sizeof(buf), fp.get())) > 0) {
    text.append(buf, n);
  }
  if (std::ferror(fp.get())) {
    return admin::HttpAnswer{503, "text/plain", file + ": " + std::strerror(errno)};
  }
  if (text.size() > kMaxDumpFile) return admin::HttpAnswer{503, "text/plain", file + ": too large"};
  return admin::HttpAnswer{200, "text/plain", std::move(text)};
}

}  // namespace turnpike::daemon
