#include "support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace turnpike::testing {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

std::vector<std::string> BuildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& x : extra) {
      if (x.substr(0, x.find('=')) == name) overridden = true;
    }
    if (!overridden) env.push_back(std::move(entry));
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const char* path, char** argv, char** envp, int stdout_fd,
                            int stderr_fd, int exec_error_fd, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGHUP, SIGTERM, SIGINT, SIGCHLD}) ::sigaction(sig, &dfl, nullptr);
  if (stdout_fd >= 0) ::dup2(stdout_fd, STDOUT_FILENO);
  if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  ::execve(path, argv, envp);
  int err = errno;
  ssize_t ignored = ::write(exec_error_fd, &err, sizeof(err));
  (void)ignored;
  ::_exit(127);
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (exited) return "exit " + std::to_string(code);
  return "signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
}

std::unique_ptr<Process> Process::Start(const std::string& binary,
                                        const std::vector<std::string>& args,
                                        const ProcessOptions& options, std::string* error) {
  std::vector<std::string> argv_strings = {binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = BuildEnvironment(options.env);
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<char*> envp = Pointers(env_strings);

  auto fail = [&](const std::string& what) {
    if (error) *error = what + ": " + std::strerror(errno);
    return nullptr;
  };
  int out_fd = -1, err_fd = -1, pipe_read = -1;
  auto close_all = [&] {
    for (int fd : {out_fd, err_fd}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (!options.stdout_file.empty()) {
    out_fd = ::open(options.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) return fail("open " + options.stdout_file);
  } else if (options.stdout_pipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fail("pipe");
    pipe_read = fds[0];
    out_fd = fds[1];
  }
  if (!options.stderr_file.empty()) {
    err_fd = ::open(options.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err_fd < 0) {
      close_all();
      if (pipe_read >= 0) ::close(pipe_read);
      return fail("open " + options.stderr_file);
    }
  }
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    close_all();
    if (pipe_read >= 0) ::close(pipe_read);
    return fail("pipe");
  }

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ExecChild(argv[0], argv.data(), envp.data(), out_fd, err_fd, exec_pipe[1], parent);
  }
  int fork_errno = errno;
  close_all();
  ::close(exec_pipe[1]);
  if (pid < 0) {
    ::close(exec_pipe[0]);
    if (pipe_read >= 0) ::close(pipe_read);
    errno = fork_errno;
    return fail("fork");
  }

  std::unique_ptr<Process> p(new Process());
  p->pid_ = pid;
  p->stdout_fd_ = pipe_read;
  p->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));

  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (n > 0) {
    p->Reap(/*block=*/true);
    if (error) *error = "exec " + binary + ": " + std::strerror(exec_errno);
    return nullptr;
  }
  return p;
}

Process::~Process() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Reap(/*block=*/true);
  }
  if (pidfd_ >= 0) ::close(pidfd_);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

bool Process::Reap(bool block) {
  if (status_) return true;
  int wstatus = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &wstatus, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  ExitStatus s;
  if (WIFEXITED(wstatus)) {
    s.exited = true;
    s.code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    s.signal = WTERMSIG(wstatus);
  }
  status_ = s;
  return true;
}

bool Process::Running() { return !Reap(/*block=*/false); }

bool Process::Signal(int sig) {
  if (status_) return false;
  return ::kill(pid_, sig) == 0;
}

std::optional<ExitStatus> Process::Wait(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!Reap(/*block=*/false)) {
    if (Clock::now() >= deadline) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, MillisLeft(deadline));  // readable once the child has exited
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no pidfd: poll waitpid
    }
  }
  return status_;
}

std::optional<std::string> Process::ReadStdoutLine(std::chrono::milliseconds timeout) {
  if (stdout_fd_ < 0) return std::nullopt;
  auto deadline = Clock::now() + timeout;
  while (true) {
    size_t nl = stdout_buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = stdout_buffer_.substr(0, nl);
      stdout_buffer_.erase(0, nl + 1);
      return line;
    }
    pollfd p{stdout_fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char buf[4096];
    ssize_t n = ::read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    stdout_buffer_.append(buf, static_cast<size_t>(n));
  }
}

RunResult RunProcess(const std::string& binary, const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout) {
  RunResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  // Start() wants files or its own pipe; use /dev/fd paths of our pipe ends.
  ProcessOptions options;
  options.stdout_file = "/dev/fd/" + std::to_string(out_pipe[1]);
  options.stderr_file = "/dev/fd/" + std::to_string(err_pipe[1]);
  std::unique_ptr<Process> p = Process::Start(binary, args, options, &result.error);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  auto deadline = Clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  while (p && open_count > 0 && Clock::now() < deadline) {
    int ready = ::poll(fds, 2, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (p) result.status = p->Wait(std::chrono::milliseconds(MillisLeft(deadline)));
  return result;
}

}  // namespace turnpike::testing
