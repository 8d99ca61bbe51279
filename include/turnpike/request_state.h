// Request state: what a plugin keeps for one request across its phases (an id made in
// rewrite and echoed in header_filter, a decision taken in header_filter and obeyed in
// body_filter, a body held back). The shared Plugin stays immutable; the state belongs to the
// request. A plugin asks for it through PluginContext::RequestState<T>(key):
//
//   struct Held {                  // any default-constructible type
//     bool rewrite = false;
//     std::string body;
//     void Clear() {               // optional: see "Reuse" below
//       rewrite = false;
//       body.clear();
//     }
//   };
//   Held& held = ctx.RequestState<Held>(this);
//
// Lifetime. A state is constructed (T()) by the first RequestState<T>(key) of a request, and
// that call and every later one of the request, in any phase, return the same object. It
// lives until the request ends (after its log phase, or when the client goes away); the first
// RequestState<T>(key) of a later request sees a fresh T.
//
// Reuse: why a warm worker allocates nothing. The memory of a request's states is kept for the
// next request on the same exchange (the per-request object a worker lends to a connection):
// states take slots in the order of their first use, and a slot is given to the next request's
// state of the same type (RequestStateType below), so the same plugins asking in the same
// order get the same objects back, and another order finds its types among the free slots.
// When a request ends each of its states is reset:
//   - T has a `void Clear()`: Clear() is called. It must leave the object as a fresh T would
//     be, and should keep the capacity of its strings and vectors (that is the point), though
//     it may let go of an unusually large buffer.
//   - otherwise the object is destroyed and a new T is constructed in its place, which frees
//     whatever it owned: fine for scalars and small fixed arrays, an allocation per request
//     for a std::string that grew.
// So: a state that owns heap memory has a Clear().
//
// Keys and type safety. `key` is an address the plugin owns: `this` for the instance's state
// (one state struct per instance is the norm), `&member_` for a second one. A state is named by
// its key and its type together: asking for a key with another type than the one it was first
// asked with in the request is a plugin bug, which debug builds stop with an assert; a release
// build gives the second type a state of its own, never the memory of the first.
//
// Thread and cost: worker thread, from the phase hooks of the request, or from a callback of
// a paused request through PausedRequest::context() (null once the request is gone). A
// callback must not keep a reference to a state across the wait: when the client goes away
// the state is reset and its memory serves a later request. A lookup compares the keys of the
// states the request uses so far (a handful); no allocation once warm.
#pragma once

#include <cassert>
#include <concepts>
#include <cstddef>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace turnpike {

// For Clear(): empties `buffer` and keeps its capacity, unless it grew past `max_kept`: a
// buffer that once held a large body then gives its memory back rather than keeping it on the
// exchange for good.
inline constexpr size_t kMaxKeptStateBuffer = size_t{1} << 20;
inline void ClearBuffer(std::string& buffer, size_t max_kept = kMaxKeptStateBuffer) {
  if (buffer.capacity() > max_kept) {
    std::string().swap(buffer);
  } else {
    buffer.clear();
  }
}

// How the request-state storage makes, resets and destroys a T without knowing T: generated
// once per type by RequestStateTypeOf<T>(). Its address identifies the type.
struct RequestStateType {
  size_t size;
  size_t align;
  void (*construct)(void* at);  // T() at `at`
  void (*destroy)(void* at);    // ~T()
  void (*reset)(void* at);      // T::Clear() when there is one, else ~T() then T()
};

namespace internal {

template <typename T>
concept HasClear = requires(T& t) {
  { t.Clear() } -> std::same_as<void>;
};

template <typename T>
inline constexpr RequestStateType kRequestStateType = {
    sizeof(T),
    alignof(T),
    [](void* at) { ::new (at) T(); },
    [](void* at) { static_cast<T*>(at)->~T(); },
    [](void* at) {
      if constexpr (HasClear<T>) {
        static_cast<T*>(at)->Clear();
      } else {
        static_cast<T*>(at)->~T();
        ::new (at) T();
      }
    },
};

}  // namespace internal

// The descriptor of T (one per type in the program: an inline variable).
template <typename T>
const RequestStateType& RequestStateTypeOf() {
  static_assert(std::is_default_constructible_v<T>,
                "a request state must be default-constructible");
  static_assert(!std::is_const_v<T> && !std::is_reference_v<T>, "a request state is a plain type");
  return internal::kRequestStateType<T>;
}

// The storage behind PluginContext::FindRequestState, for whoever implements a PluginContext:
// the proxy's request context, and test doubles that want to behave like it. Not thread-safe;
// one per context.
class RequestStateStore {
 public:
  RequestStateStore() = default;
  RequestStateStore(const RequestStateStore&) = delete;
  RequestStateStore& operator=(const RequestStateStore&) = delete;
  ~RequestStateStore() {
    for (Slot& s : slots_) Free(s);
  }

  // The state of (`key`, `type`) for the current request, constructed on first use. Never
  // null. Allocates only when no kept slot can hold a state of `type`.
  void* Find(const void* key, const RequestStateType& type) {
    for (size_t i = 0; i < used_; ++i) {
      Slot& s = slots_[i];
      if (s.key != key) continue;
      if (s.type == &type) return s.mem;
      assert(false && "RequestState: this key was first asked for with another type");
    }
    return Take(key, type);
  }

  // The request ended: every state in use is reset (kept for the next request).
  void EndRequest() {
    for (size_t i = 0; i < used_; ++i) slots_[i].type->reset(slots_[i].mem);
    used_ = 0;
  }

  // States the current request has asked for.
  size_t in_use() const { return used_; }
  // Slots kept, in use or not (tests).
  size_t kept() const { return slots_.size(); }

 private:
  struct Slot {
    const void* key = nullptr;
    const RequestStateType* type = nullptr;  // of the object living in `mem`
    void* mem = nullptr;
    size_t bytes = 0;  // allocated at `mem`
    size_t align = 0;  // of that allocation
  };

  // A slot for a new state: position used_ (the same plugins in the same order find their
  // type there), else a free slot of that type further on, else a free slot whose memory is
  // big enough (its old object is destroyed), else new memory.
  void* Take(const void* key, const RequestStateType& type) {
    size_t at = used_;
    if (at < slots_.size() && slots_[at].type != &type) {
      for (size_t j = at + 1; j < slots_.size(); ++j) {
        if (slots_[j].type == &type) {
          std::swap(slots_[at], slots_[j]);
          break;
        }
      }
    }
    if (at == slots_.size()) slots_.emplace_back();
    Slot& s = slots_[at];
    if (s.type != &type) {
      if (s.type != nullptr) {
        s.type->destroy(s.mem);
        s.type = nullptr;
      }
      if (s.bytes < type.size || s.align < type.align) {
        Free(s);
        s.align = type.align > __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? type.align
                                                                : __STDCPP_DEFAULT_NEW_ALIGNMENT__;
        s.bytes = type.size;
        s.mem = s.align > __STDCPP_DEFAULT_NEW_ALIGNMENT__
                    ? ::operator new(type.size, std::align_val_t(s.align))
                    : ::operator new(type.size);
      }
      type.construct(s.mem);
      s.type = &type;
    }
    s.key = key;
    ++used_;
    return s.mem;
  }

  static void Free(Slot& s) {
    if (s.type != nullptr) s.type->destroy(s.mem);
    if (s.mem != nullptr) {
      if (s.align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
        ::operator delete(s.mem, std::align_val_t(s.align));
      } else {
        ::operator delete(s.mem);
      }
    }
    s = Slot();
  }

  std::vector<Slot> slots_;  // [0, used_) belong to the current request
  size_t used_ = 0;
};

}  // namespace turnpike
