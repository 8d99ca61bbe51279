// The test backend (tests/backend/test_backend.cc) as a child process of a test.
#pragma once

#include <memory>
#include <string>

#include "support/process.h"

namespace turnpike::testing {

class Backend {
 public:
  // Runs `binary --listen 127.0.0.1:0 --id <id>`, waits (up to 10 s) for its
  // "LISTENING <port>" line. nullptr and `error` on failure. The process is killed when the
  // Backend is destroyed.
  // `port`: listen there instead (a test restarting a node it stopped).
  static std::unique_ptr<Backend> Start(const std::string& binary, const std::string& id,
                                        std::string* error = nullptr, int port = 0);

  int port() const { return port_; }
  const std::string& id() const { return id_; }
  Process& process() { return *process_; }

 private:
  Backend() = default;

  std::unique_ptr<Process> process_;
  std::string id_;
  int port_ = 0;
};

// Same as Backend::Start; reports failure to the current test (ADD_FAILURE) and returns
// nullptr.
std::unique_ptr<Backend> StartBackend(const std::string& binary, const std::string& id);

}  // namespace turnpike::testing
