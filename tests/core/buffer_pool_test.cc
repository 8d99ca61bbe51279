#include "core/buffer_pool.h"

#include <gtest/gtest.h>

namespace turnpike::core {
namespace {

TEST(BufferPoolTest, ReturnedBuffersAreReusedLastInFirstOut) {
  BufferPool pool(4096, 4);
  char* a = pool.Take();
  char* b = pool.Take();
  ASSERT_NE(a, b);
  a[0] = 'x';
  a[4095] = 'y';  // the whole size is usable
  pool.Return(a);
  pool.Return(b);
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.Take(), b);
  EXPECT_EQ(pool.Take(), a);
  EXPECT_EQ(pool.idle(), 0u);
  pool.Return(a);
  pool.Return(b);
}

TEST(BufferPoolTest, KeepsAtMostMaxIdle) {
  BufferPool pool(64, 2);
  char* bufs[5];
  for (char*& b : bufs) b = pool.Take();
  for (char* b : bufs) pool.Return(b);  // the three beyond max_idle are freed (ASan checks)
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.buffer_size(), 64u);
}

}  // namespace
}  // namespace turnpike::core
