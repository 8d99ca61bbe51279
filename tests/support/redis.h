// A real redis-server for tests: started on 127.0.0.1 and a free port, with no persistence,
// killed by PID when the object goes (or by Kill() mid-test, then Start() again on the same
// port). Commands go through redis-cli.
//
// FreePort() only says a port was free when it looked: a test running beside this one may bind
// it first (redis-server then exits), or a redis-server of another test may already serve it
// and answer PING. So a start counts only once the server that answers is this object's process
// (`INFO server`'s process_id), and a first start that lost its port moves to another one (up
// to 5 ports); a restart after Kill() keeps its port, which clients were given.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/process.h"

namespace turnpike::testing {

class RedisServer {
 public:
  // Picks a free port; Start() runs the server on it (or on another, see above).
  RedisServer();
  ~RedisServer();

  // Starts redis-server (again, after Kill()) and waits until it answers PING. False with
  // error() when it could not. `extra` goes on the command line ("--replicaof", ...).
  bool Start(const std::vector<std::string>& extra = {});
  // The same, with `extra` made for each port tried (when the first is taken, the retry's
  // arguments may name the new port, or other ports the same race may have taken).
  bool StartWith(const std::function<std::vector<std::string>(int port)>& extra);
  // Starts a sentinel instead, monitoring `name` at 127.0.0.1:`master_port` with a quorum of
  // one and quick failure detection (down after 500 ms).
  bool StartSentinel(int master_port, const std::string& name);
  // SIGKILL: a crash, as far as clients can tell.
  void Kill();
  // SIGSTOP / SIGCONT: a server that accepts bytes but answers nothing.
  void Pause();
  void Resume();

  int port() const { return port_; }
  const std::string& error() const { return error_; }
  // redis-cli's answer to `args` (raw, trailing newline removed).
  std::string Command(const std::vector<std::string>& args) const;

  // Whether redis-server is installed (tests skip, saying so, when it is not).
  static bool Available();

 private:
  // Starts redis-server with args(port_) and waits for its own PONG; see above.
  bool Launch(const std::function<std::vector<std::string>(int port)>& args);
  bool LaunchOnce(const std::vector<std::string>& args, bool* port_lost);

  int port_ = 0;
  std::string error_;
  std::string sentinel_conf_;  // removed with the object
  std::unique_ptr<Process> process_;
  bool started_ = false;  // once: the port is given out and stays
};

}  // namespace turnpike::testing
