// Memory usage of running processes, from /proc/<pid>/status (Linux).
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

namespace turnpike::testing {

struct ProcMemory {
  long vm_rss_kb = 0;  // VmRSS: resident now
  long vm_hwm_kb = 0;  // VmHWM: peak resident ("high water mark")
};

// nullopt if the process does not exist (or is a zombie without memory lines).
std::optional<ProcMemory> ReadProcMemory(pid_t pid);

// `root` and all its descendants that are alive now (a forking daemon's workers).
std::vector<pid_t> ProcessTree(pid_t root);

// ReadProcMemory summed over ProcessTree(root). Shared pages of forked workers count once per
// process, so this over-estimates; good for upper-bound assertions.
ProcMemory TreeMemory(pid_t root);

}  // namespace turnpike::testing
