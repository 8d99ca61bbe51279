#include "core/write_batch.h"

#include <cassert>
#include <cstring>

#include "core/tcp_connection.h"

namespace turnpike::core {
namespace {

thread_local WriteBatch* t_batch = nullptr;

}  // namespace

WriteBatch::~WriteBatch() { assert(loop_ == nullptr); }

void WriteBatch::Start(uv_loop_t* loop) {
  assert(loop_ == nullptr);
  loop_ = loop;
  uv_prepare_init(loop, &prepare_);
  uv_check_init(loop, &check_);
  prepare_.data = check_.data = this;
  uv_prepare_start(&prepare_, &OnPrepare);
  uv_check_start(&check_, &OnCheck);
  uv_unref(reinterpret_cast<uv_handle_t*>(&prepare_));
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
  Grow();
  t_batch = this;
}

void WriteBatch::Close() {
  if (loop_ == nullptr) return;
  Flush();
  loop_ = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
  if (t_batch == this) t_batch = nullptr;
}

WriteBatch* WriteBatch::ForLoop(uv_loop_t* loop) {
  return t_batch != nullptr && t_batch->loop_ == loop ? t_batch : nullptr;
}

void WriteBatch::Grow() {
  const size_t capacity = capacity_ == 0 ? 256 : capacity_ * 2;
  auto grown = std::make_unique_for_overwrite<Entry[]>(capacity);
  if (size_ != 0) std::memcpy(grown.get(), entries_.get(), size_ * sizeof(Entry));
  entries_ = std::move(grown);
  capacity_ = capacity;
}

void WriteBatch::Defer(TcpConnection* conn, const uv_buf_t* bufs, unsigned count) {
  assert(collecting_ && count > 0 && count <= kMaxBuffers);
  if (size_ == capacity_) Grow();
  Entry& e = entries_[size_++];
  e.conn = conn;
  e.count = count;
  for (unsigned i = 0; i < count; ++i) e.bufs[i] = bufs[i];
}

void WriteBatch::OnPrepare(uv_prepare_t* h) { static_cast<WriteBatch*>(h->data)->collecting_ = true; }

void WriteBatch::OnCheck(uv_check_t* h) { static_cast<WriteBatch*>(h->data)->Flush(); }

void WriteBatch::Flush() {
  // Writes the completions make go out at once: nothing is appended during the walk. A
  // completion may close a connection whose write is further down; it is skipped then (its
  // memory lasts until the loop's closing phase, after this one).
  collecting_ = false;
  for (size_t i = 0; i < size_; ++i) {
    Entry& e = entries_[i];
    e.conn->SendDeferred(e.bufs, e.count);
  }
  size_ = 0;
}

}  // namespace turnpike::core
