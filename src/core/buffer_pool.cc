#include "core/buffer_pool.h"

namespace turnpike::core {

BufferPool::BufferPool(size_t buffer_size, size_t max_idle)
    : buffer_size_(buffer_size), max_idle_(max_idle) {
  idle_.reserve(max_idle);  // Return() never allocates
}

BufferPool::~BufferPool() {
  for (char* b : idle_) delete[] b;
}

char* BufferPool::Take() {
  if (idle_.empty()) return new char[buffer_size_];
  char* b = idle_.back();
  idle_.pop_back();
  return b;
}

void BufferPool::Return(char* buffer) {
  if (idle_.size() >= max_idle_) {
    delete[] buffer;
    return;
  }
  idle_.push_back(buffer);
}

}  // namespace turnpike::core
