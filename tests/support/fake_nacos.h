// A FAKE Nacos naming server for tests: tests/support/fake_nacos.py (python3) on 127.0.0.1,
// answering the Nacos v1 open API as documented (login with accessToken, ns/instance/list, register
// / deregister) from instances the test sets, with controls for failures, slow answers and expired
// tokens. Nacos itself (a Java service) is not installable here; this is not Nacos, and the tests
// that use it say so. Killed by PID with the object.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/process.h"

namespace turnpike::testing {

class FakeNacos {
 public:
  struct Options {
    std::string auth;       // "user:pass": listing needs a token from auth/login
    int token_ttl = 18000;  // seconds, the login answer's tokenTtl
    std::string prefix = "/nacos/v1/";
  };

  FakeNacos() = default;
  ~FakeNacos() = default;

  // Starts the server (on a free port the first time, on the same port again after Kill()). False
  // with error() when it could not.
  bool Start(const Options& options);
  bool Start() { return Start(Options{}); }
  // Gone at once (SIGKILL): its state (instances, tokens) is lost, as a registry restarted.
  void Kill();

  // Replaces the instances of `service` in `namespace_id` / `group`. Each instance is a JSON object
  // {ip, port, weight, healthy, enabled, metadata} (Nacos' fields are filled in), or anything else
  // for odd answers.
  bool SetInstances(const std::string& service, const std::vector<nlohmann::json>& instances,
                    const std::string& namespace_id = "public",
                    const std::string& group = "DEFAULT_GROUP");
  // {"delay_ms": N, "status": CODE, "body": TEXT, "expire_tokens": true}; {} for normal.
  bool SetBehaviour(const nlohmann::json& behaviour);
  // The Nacos API requests received so far: [{"method", "path", "query": {...}}].
  nlohmann::json Log();
  bool ClearLog();

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& error() const { return error_; }

  static bool Available();  // python3 is installed
  static std::string Script();

 private:
  bool Post(const std::string& target, const std::string& body);

  int port_ = 0;
  std::string error_;
  std::unique_ptr<Process> process_;
};

}  // namespace turnpike::testing
