// A stand-in for libFuzzer's main(): runs LLVMFuzzerTestOneInput once over every file named on
// the command line, directories read recursively in name order. Linked into
// <target>_fuzz_replay, which ctest runs over the target's corpus (fuzz_replay.<target>), so
// the corpus is a regression test in every build, with or without clang and sanitizers.
//
// Each input is passed in a heap block of exactly its size (as libFuzzer does), so an ASan
// build catches reads past its end. Exits 1 when an argument cannot be read or no input was
// found (a wrong corpus path must not pass silently); a failing input crashes as it would
// under libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool ReadFile(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Appends the regular files at `arg` (itself, or those below it) to *files.
bool Collect(const std::filesystem::path& arg, std::vector<std::filesystem::path>* files) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) {
    files->push_back(arg);
    return true;
  }
  if (!std::filesystem::is_directory(arg, ec)) return false;
  std::vector<std::filesystem::path> found;
  for (auto it = std::filesystem::recursive_directory_iterator(arg, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) found.push_back(it->path());
  }
  if (ec) return false;
  std::sort(found.begin(), found.end());
  files->insert(files->end(), found.begin(), found.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!Collect(argv[i], &files)) {
      std::fprintf(stderr, "replay: cannot read %s\n", argv[i]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 1;
  }
  std::string content;
  for (const std::filesystem::path& path : files) {
    if (!ReadFile(path, &content)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    // Exactly the input's size; one byte for an empty input so the pointer is valid.
    std::unique_ptr<uint8_t[]> copy(new uint8_t[std::max<size_t>(content.size(), 1)]);
    std::memcpy(copy.get(), content.data(), content.size());
    LLVMFuzzerTestOneInput(copy.get(), content.size());
  }
  std::printf("replay: %zu inputs ran\n", files.size());
  return 0;
}
