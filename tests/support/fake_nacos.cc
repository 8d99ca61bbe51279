#include "support/fake_nacos.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "support/http_client.h"

namespace turnpike::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::string Encode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

}  // namespace

bool FakeNacos::Available() { return access(kPython, X_OK) == 0; }

std::string FakeNacos::Script() { return TURNPIKE_FAKE_NACOS_PY; }

bool FakeNacos::Start(const Options& options) {
  Kill();
  std::vector<std::string> args = {Script(),
                                   "--port",
                                   std::to_string(port_),
                                   "--prefix",
                                   options.prefix,
                                   "--token-ttl",
                                   std::to_string(options.token_ttl)};
  if (!options.auth.empty()) {
    args.push_back("--auth");
    args.push_back(options.auth);
  }
  ProcessOptions po;
  po.stdout_pipe = true;
  std::string err;
  // Restarting on the same port may race the old socket's release: try a few times.
  for (int attempt = 0; attempt < 20; ++attempt) {
    process_ = Process::Start(kPython, args, po, &err);
    if (!process_) {
      error_ = "fake nacos: " + err;
      return false;
    }
    std::optional<std::string> line = process_->ReadStdoutLine(std::chrono::seconds(10));
    if (line && line->rfind("LISTENING ", 0) == 0) {
      port_ = std::atoi(line->c_str() + 10);
      return true;
    }
    process_.reset();
    if (port_ == 0) break;
    usleep(100 * 1000);
  }
  error_ = "fake nacos did not report LISTENING";
  return false;
}

void FakeNacos::Kill() { process_.reset(); }

bool FakeNacos::Post(const std::string& target, const std::string& body) {
  HttpRequest req;
  req.method = "POST";
  req.target = target;
  req.body = body;
  HttpResponse r = Fetch(port_, req);
  if (r.status != 200) {
    error_ = "fake nacos " + target + ": " + r.DebugString();
    return false;
  }
  return true;
}

bool FakeNacos::SetInstances(const std::string& service,
                             const std::vector<nlohmann::json>& instances,
                             const std::string& namespace_id, const std::string& group) {
  return Post("/fake/instances?serviceName=" + Encode(service) +
                  "&namespaceId=" + Encode(namespace_id) + "&groupName=" + Encode(group),
              nlohmann::json(instances).dump());
}

bool FakeNacos::SetBehaviour(const nlohmann::json& behaviour) {
  return Post("/fake/behaviour", behaviour.dump());
}

bool FakeNacos::ClearLog() { return Post("/fake/log/clear", ""); }

nlohmann::json FakeNacos::Log() {
  HttpResponse r = Get(port_, "/fake/log");
  if (r.status != 200) return nlohmann::json::array();
  return nlohmann::json::parse(r.body, nullptr, false);
}

}  // namespace turnpike::testing
