// Heap allocation counting for tests that assert a code path does not allocate.
//
// Linking this (any test that calls these functions pulls it in) replaces the global
// operator new/delete of the test binary with counting versions, and counts the C heap's
// allocations too (MallocCalls): libraries written in C (hiredis, libuv) call malloc
// directly, never operator new.
#pragma once

#include <cstdint>

namespace turnpike::testing {

// Allocations made by the calling thread since it started.
uint64_t ThreadAllocations();

// Allocations made by every thread of the process.
uint64_t TotalAllocations();

// Calls of malloc, calloc, realloc and the aligned allocators made by every thread of the
// process, whoever made them (operator new's included: it calls malloc). Without the
// sanitizers the binary's own malloc family forwards to glibc's (__libc_malloc, ...) and
// counts; under AddressSanitizer, whose allocator is the process's, its allocation hook
// counts.
uint64_t MallocCalls();

}  // namespace turnpike::testing
