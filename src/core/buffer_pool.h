// BufferPool: fixed-size byte buffers lent to connections while they have bytes to hold.
//
// A keep-alive connection that waits for its next request holds no read buffer (nginx frees
// its request buffers the same way), so idle connections cost a few hundred bytes instead of
// a buffer each; a busy connection takes one back at its next read. Up to `max_idle` returned
// buffers are kept for reuse, so a warm worker allocates nothing per request.
//
// Owned by one worker loop; not thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace turnpike::core {

class BufferPool {
 public:
  BufferPool(size_t buffer_size, size_t max_idle);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_size() bytes (contents unspecified): an idle one, or a new one.
  char* Take() {
    if (idle_.empty()) return new char[buffer_size_];
    char* b = idle_.back();
    idle_.pop_back();
    return b;
  }
  // Gives `buffer` (from Take()) back; it is freed when max_idle buffers are idle already.
  void Return(char* buffer) {
    if (idle_.size() >= max_idle_) {
      delete[] buffer;
      return;
    }
    idle_.push_back(buffer);
  }

  size_t buffer_size() const { return buffer_size_; }
  size_t idle() const { return idle_.size(); }

 private:
  size_t buffer_size_;
  size_t max_idle_;
  std::vector<char*> idle_;
};

}  // namespace turnpike::core
