// Scratch directories and file writes for tests.
#pragma once

#include <string>

namespace turnpike::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction unless
// the environment variable TURNPIKE_KEEP_TMP is set (handy when debugging a failure).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `content` to `path` (truncating). False and `error` on failure.
bool WriteFile(const std::string& path, const std::string& content, std::string* error = nullptr);

// Writes `content` to a sibling temporary file, then rename()s it over `path`, so a reader
// sees either the old or the new file, never a partial one.
bool WriteFileAtomic(const std::string& path, const std::string& content,
                     std::string* error = nullptr);

// The whole file, or "" if it cannot be read.
std::string ReadFile(const std::string& path);

}  // namespace turnpike::testing
