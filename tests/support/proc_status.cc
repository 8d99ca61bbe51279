#include "support/proc_status.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace turnpike::testing {

std::optional<ProcMemory> ReadProcMemory(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in) return std::nullopt;
  ProcMemory m;
  bool found = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      m.vm_rss_kb = std::strtol(line.c_str() + 6, nullptr, 10);
      found = true;
    } else if (line.rfind("VmHWM:", 0) == 0) {
      m.vm_hwm_kb = std::strtol(line.c_str() + 6, nullptr, 10);
      found = true;
    }
  }
  if (!found) return std::nullopt;
  return m;
}

std::vector<pid_t> ProcessTree(pid_t root) {
  // Parent of every process, from /proc/<pid>/stat field 4 (after the parenthesised comm).
  std::multimap<pid_t, pid_t> children;
  if (DIR* dir = ::opendir("/proc")) {
    while (dirent* e = ::readdir(dir)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      size_t paren = stat.rfind(')');
      if (paren == std::string::npos) continue;
      std::istringstream fields(stat.substr(paren + 1));
      std::string state;
      long ppid = 0;
      fields >> state >> ppid;
      children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
    }
    ::closedir(dir);
  }
  std::vector<pid_t> tree = {root};
  for (size_t i = 0; i < tree.size(); ++i) {
    auto [begin, end] = children.equal_range(tree[i]);
    for (auto it = begin; it != end; ++it) tree.push_back(it->second);
  }
  return tree;
}

ProcMemory TreeMemory(pid_t root) {
  ProcMemory total;
  for (pid_t pid : ProcessTree(root)) {
    if (std::optional<ProcMemory> m = ReadProcMemory(pid)) {
      total.vm_rss_kb += m->vm_rss_kb;
      total.vm_hwm_kb += m->vm_hwm_kb;
    }
  }
  return total;
}

}  // namespace turnpike::testing
