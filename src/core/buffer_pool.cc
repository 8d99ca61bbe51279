#include "core/buffer_pool.h"

namespace turnpike::core {

BufferPool::BufferPool(size_t buffer_size, size_t max_idle)
    : buffer_size_(buffer_size), max_idle_(max_idle) {
  idle_.reserve(max_idle);  // Return() never allocates
}

BufferPool::~BufferPool() {
  for (char* b : idle_) delete[] b;
}

}  // namespace turnpike::core
