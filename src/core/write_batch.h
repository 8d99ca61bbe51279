// WriteBatch: the socket writes a loop makes while it handles one epoll_wait's events, sent
// together after the last of those events (h2o's and Seastar's reactors flush their writes the
// same way, once per loop turn).
//
// Why. A worker that sends each answer as soon as it has it wakes a sleeping peer (the client,
// the upstream) once per send: on loopback the send delivers the segment and wakes the peer's
// epoll_wait from the sender's own system call, an inter-processor interrupt when the peer's
// CPU is idle. Sending a turn's writes back to back lets the first send wake a peer and the
// next ones find it awake. bench/floor_proxy's `epollbatch` model measures the difference on
// the kernel path alone (docs/benchmarks.md).
//
// How. libuv runs a turn's phases in order: timers, pending callbacks, idle, prepare, poll (the
// I/O callbacks), check, closing. A prepare handle opens the batch and a check handle sends it,
// so only writes made by I/O callbacks wait, and never past the end of their turn: a write made
// in any other phase (a timer's, the check phase's own, a completion's from the flush) goes out
// at once, as does one on a loop without a batch (the control thread's, tests'). Both handles
// are unreferenced: they never keep a loop alive.
//
// A deferred write is still "in progress" for its connection (TcpConnection::writing()), its
// OnWritten comes from the flush, and Close() before the flush abandons it as it abandons a
// queued write. Nothing here allocates once its array has grown to the busiest turn's writes.
//
// Thread rules: one loop, one thread. Start() binds the batch to the calling thread, which must
// be the loop's: TcpConnection::Init() on that thread and loop finds it through ForLoop().
#pragma once

#include <uv.h>

#include <cstddef>
#include <memory>

namespace turnpike::core {

class TcpConnection;

class WriteBatch {
 public:
  // Writes of more buffers than this are not deferred (they go out as before, at once).
  static constexpr unsigned kMaxBuffers = 4;

  WriteBatch() = default;
  // REQUIRES: never started, or Close() ran and the loop has run the handles' close callbacks.
  // (A closed batch may not be started again.)
  ~WriteBatch();
  WriteBatch(const WriteBatch&) = delete;
  WriteBatch& operator=(const WriteBatch&) = delete;

  // Starts batching the I/O callbacks' writes on `loop`, the calling thread's loop.
  void Start(uv_loop_t* loop);
  // Sends what is pending, stops batching and closes the handles (their callbacks run on the
  // loop). Idempotent.
  void Close();

  // The batch started on this thread for `loop`, or nullptr.
  static WriteBatch* ForLoop(uv_loop_t* loop);

  // True between the prepare and check phases of a turn: a write now may wait for the flush.
  bool collecting() const { return collecting_; }

  // Keeps `conn`'s write for the flush. REQUIRES: collecting(), 0 < count <= kMaxBuffers.
  void Defer(TcpConnection* conn, const uv_buf_t* bufs, unsigned count);

  // Writes waiting for this turn's flush.
  size_t pending() const { return size_; }

 private:
  struct Entry {
    TcpConnection* conn;
    unsigned count;
    uv_buf_t bufs[kMaxBuffers];
  };

  static void OnPrepare(uv_prepare_t* h);
  static void OnCheck(uv_check_t* h);
  void Flush();
  void Grow();

  uv_prepare_t prepare_{};
  uv_check_t check_{};
  // The turn's deferred writes; the array grows to the busiest turn's count and stays.
  std::unique_ptr<Entry[]> entries_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  uv_loop_t* loop_ = nullptr;  // while started (Start() to Close())
  bool collecting_ = false;
};

}  // namespace turnpike::core
