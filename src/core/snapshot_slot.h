// SnapshotSlot: hands the latest immutable snapshot from one thread to another.
//
// The control thread Store()s a new value and then wakes the reader (uv_async_send); the
// reader Load()s on its own loop. Only the latest value is kept: a slow reader skips
// intermediate versions, which is what "latest wins" config distribution wants. The lock is
// held only for a pointer copy, never on a per-request path.
#pragma once

#include <memory>
#include <mutex>

namespace turnpike::core {

template <typename T>
class SnapshotSlot {
 public:
  void Store(std::shared_ptr<const T> value) {
    std::lock_guard<std::mutex> lock(mu_);
    value_.swap(value);
    // the previous value (now in `value`) is released outside the lock
  }

  std::shared_ptr<const T> Load() const {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const T> value_;
};

}  // namespace turnpike::core
