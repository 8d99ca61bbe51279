// Child processes for tests: start a real binary, signal it, wait for it with a timeout.
//
// Not thread-safe; use one Process from one thread. Children get PR_SET_PDEATHSIG(SIGKILL),
// so they die with the test process; note that Linux ties this to the *thread* that started
// them, so start processes from the test's main thread (or one that outlives them).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace turnpike::testing {

struct ExitStatus {
  bool exited = false;  // true: normal exit and `code` is valid; false: killed by `signal`
  int code = -1;
  int signal = 0;

  bool Success() const { return exited && code == 0; }
  std::string ToString() const;  // "exit 0", "signal 9 (Killed)"
};

struct ProcessOptions {
  std::vector<std::string> env;  // "NAME=value" entries added to (or replacing) the inherited
                                 // environment
  std::string stdout_file;       // redirect stdout to this file (truncated) ...
  bool stdout_pipe = false;      // ... or to a pipe read with ReadStdoutLine(); else inherit
  std::string stderr_file;       // redirect stderr to this file (truncated); else inherit
};

class Process {
 public:
  // Starts `binary` with `args` as argv[1..]. Returns nullptr and fills `error` when the
  // process cannot be created or exec fails.
  static std::unique_ptr<Process> Start(const std::string& binary,
                                        const std::vector<std::string>& args,
                                        const ProcessOptions& options, std::string* error);

  // Kills (SIGKILL, by PID) and reaps the child if it is still running.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t Pid() const { return pid_; }

  // True until the child has exited (reaps it if it just did).
  bool Running();

  // Sends `sig` to the child. False if it was already reaped or kill() failed.
  bool Signal(int sig);

  // Waits up to `timeout` for the child to exit; nullopt if it is still running.
  std::optional<ExitStatus> Wait(std::chrono::milliseconds timeout);

  // Exit status once reaped.
  const std::optional<ExitStatus>& exit_status() const { return status_; }

  // Reads one line (without the newline) from the stdout pipe; nullopt on timeout or EOF.
  // Requires ProcessOptions::stdout_pipe.
  std::optional<std::string> ReadStdoutLine(std::chrono::milliseconds timeout);

 private:
  Process() = default;
  bool Reap(bool block);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdout_fd_ = -1;
  std::string stdout_buffer_;
  std::optional<ExitStatus> status_;
};

// Result of running a command to completion.
struct RunResult {
  std::optional<ExitStatus> status;  // nullopt: timed out (the process was killed)
  std::string out;                   // stdout
  std::string err;                   // stderr
  std::string error;                 // could not start
};

// Runs `binary args...` with stdout/stderr captured, killing it after `timeout`.
RunResult RunProcess(const std::string& binary, const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace turnpike::testing
