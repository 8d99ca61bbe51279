#include "support/backend.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace turnpike::testing {

std::unique_ptr<Backend> Backend::Start(const std::string& binary, const std::string& id,
                                        std::string* error, int port_wanted) {
  ProcessOptions options;
  options.stdout_pipe = true;
  std::string err;
  std::unique_ptr<Process> p = Process::Start(
      binary, {"--listen", "127.0.0.1:" + std::to_string(port_wanted), "--id", id}, options, &err);
  if (!p) {
    if (error) *error = "backend " + id + ": " + err;
    return nullptr;
  }
  std::optional<std::string> line = p->ReadStdoutLine(std::chrono::seconds(10));
  int port = 0;
  if (line && line->rfind("LISTENING ", 0) == 0) port = std::atoi(line->c_str() + 10);
  if (port <= 0) {
    if (error) {
      std::optional<ExitStatus> st = p->Wait(std::chrono::milliseconds(0));
      *error = "backend " + id + " did not report LISTENING (got '" + line.value_or("") + "', " +
               (st ? st->ToString() : "still running") + ")";
    }
    return nullptr;
  }
  std::unique_ptr<Backend> b(new Backend());
  b->process_ = std::move(p);
  b->id_ = id;
  b->port_ = port;
  return b;
}

std::unique_ptr<Backend> StartBackend(const std::string& binary, const std::string& id) {
  std::string error;
  std::unique_ptr<Backend> b = Backend::Start(binary, id, &error);
  if (!b) ADD_FAILURE() << error;
  return b;
}

}  // namespace turnpike::testing
