// Typed request state (include/turnpike/request_state.h): one object per key and type for a
// request, reset at its end by Clear() or by destroying and rebuilding, slots reused by type
// so that warm requests allocate nothing, and a key asked for with two types never shares
// memory.
#include "turnpike/request_state.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/alloc_counter.h"

namespace turnpike {
namespace {

// Counts its constructions and destructions; no Clear(), so a reset rebuilds it.
struct Counted {
  static inline int constructed = 0;
  static inline int destroyed = 0;
  Counted() { ++constructed; }
  ~Counted() { ++destroyed; }
  int value = 0;
};

// Has a Clear(): a reset keeps the object and the capacity of its buffer.
struct Buffered {
  static inline int clears = 0;
  std::string text;
  bool flag = false;
  void Clear() {
    ++clears;
    text.clear();
    flag = false;
  }
};

struct alignas(64) OverAligned {
  char bytes[64] = {};
};

class RequestStateTest : public ::testing::Test {
 protected:
  template <typename T>
  T& Get(const void* key) {
    return *static_cast<T*>(store_.Find(key, RequestStateTypeOf<T>()));
  }
  void SetUp() override { Counted::constructed = Counted::destroyed = Buffered::clears = 0; }
  RequestStateStore store_;
  int a_ = 0;
  int b_ = 0;
};

TEST_F(RequestStateTest, OneObjectPerKeyForTheWholeRequest) {
  Buffered& first = Get<Buffered>(&a_);
  first.text = "id-1";
  Counted& other = Get<Counted>(&b_);
  other.value = 7;
  // Whatever else is asked meanwhile, the same objects come back.
  for (int i = 0; i < 20; ++i) Get<Counted>(reinterpret_cast<const char*>(&b_) + 1 + i);
  EXPECT_EQ(&Get<Buffered>(&a_), &first);
  EXPECT_EQ(Get<Buffered>(&a_).text, "id-1");
  EXPECT_EQ(&Get<Counted>(&b_), &other);
  EXPECT_EQ(Get<Counted>(&b_).value, 7);
  EXPECT_EQ(store_.in_use(), 22u);
}

TEST_F(RequestStateTest, ResetAtTheEndOfTheRequest) {
  Buffered& buffered = Get<Buffered>(&a_);
  buffered.text.assign(1000, 'x');
  buffered.flag = true;
  size_t capacity = buffered.text.capacity();
  Get<Counted>(&b_).value = 3;
  EXPECT_EQ(Counted::constructed, 1);
  store_.EndRequest();
  EXPECT_EQ(store_.in_use(), 0u);
  // Clear(): the same object, empty, its capacity kept.
  EXPECT_EQ(Buffered::clears, 1);
  Buffered& again = Get<Buffered>(&a_);
  EXPECT_EQ(&again, &buffered);
  EXPECT_TRUE(again.text.empty());
  EXPECT_FALSE(again.flag);
  EXPECT_EQ(again.text.capacity(), capacity);
  // No Clear(): destroyed and constructed again in place.
  EXPECT_EQ(Counted::destroyed, 1);
  EXPECT_EQ(Counted::constructed, 2);
  EXPECT_EQ(Get<Counted>(&b_).value, 0);
}

TEST_F(RequestStateTest, WarmRequestsAllocateNothingWhateverTheOrder) {
  auto request = [&](bool reversed) {
    if (reversed) {
      Get<Counted>(&b_).value = 1;
      Get<Buffered>(&a_).text.assign("a value that needs the heap, longer than SSO");
    } else {
      Get<Buffered>(&a_).text.assign("a value that needs the heap, longer than SSO");
      Get<Counted>(&b_).value = 1;
    }
    store_.EndRequest();
  };
  request(false);
  request(true);
  uint64_t before = testing::ThreadAllocations();
  for (int i = 0; i < 100; ++i) request(i % 2 == 0);
  EXPECT_EQ(testing::ThreadAllocations() - before, 0u);
  EXPECT_EQ(store_.kept(), 2u);
}

TEST_F(RequestStateTest, AFreeSlotOfAnotherTypeIsReused) {
  Get<Counted>(&a_);
  store_.EndRequest();
  // The next request asks for another (smaller or equal) type first: the memory is reused
  // after the old object is destroyed.
  uint64_t before = testing::ThreadAllocations();
  int& v = Get<int>(&b_);
  EXPECT_EQ(testing::ThreadAllocations() - before, 0u);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(Counted::destroyed, 2);  // rebuilt at the end of the request, then gone for int
  EXPECT_EQ(store_.kept(), 1u);
}

TEST_F(RequestStateTest, OverAlignedTypesAreAligned) {
  OverAligned& o = Get<OverAligned>(&a_);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&o) % 64, 0u);
  store_.EndRequest();
  Get<char>(&a_);
  store_.EndRequest();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&Get<OverAligned>(&a_)) % 64, 0u);
}

TEST_F(RequestStateTest, DestroyedWithTheStore) {
  {
    RequestStateStore store;
    store.Find(&a_, RequestStateTypeOf<Counted>());
    store.EndRequest();                              // rebuilt: 2 constructed, 1 destroyed
    store.Find(&b_, RequestStateTypeOf<Counted>());  // the kept one
  }
  EXPECT_EQ(Counted::constructed, 2);
  EXPECT_EQ(Counted::destroyed, 2);
}

#ifndef NDEBUG
TEST_F(RequestStateTest, AKeyWithAnotherTypeIsCaughtInDebugBuilds) {
  Get<Buffered>(&a_);
  EXPECT_DEATH(Get<Counted>(&a_), "first asked for with another type");
}
#else
TEST_F(RequestStateTest, AKeyWithAnotherTypeGetsMemoryOfItsOwn) {
  Buffered& buffered = Get<Buffered>(&a_);
  buffered.text = "kept";
  Counted& counted = Get<Counted>(&a_);
  EXPECT_NE(static_cast<void*>(&counted), static_cast<void*>(&buffered));
  EXPECT_EQ(&Get<Buffered>(&a_), &buffered);
  EXPECT_EQ(buffered.text, "kept");
  EXPECT_EQ(&Get<Counted>(&a_), &counted);
}
#endif

}  // namespace
}  // namespace turnpike
