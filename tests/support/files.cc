#include "support/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace turnpike::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/turnpike-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
}

TempDir::~TempDir() {
  if (path_.empty() || std::getenv("TURNPIKE_KEEP_TMP") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool WriteFile(const std::string& path, const std::string& content, std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error) *error = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = "write " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return ::close(fd) == 0;
}

bool WriteFileAtomic(const std::string& path, const std::string& content, std::string* error) {
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  if (!WriteFile(tmp, content, error)) return false;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = "rename " + tmp + " -> " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace turnpike::testing
