// Heap allocation counting for tests that assert a code path does not allocate.
//
// Linking this (any test that calls these functions pulls it in) replaces the global
// operator new/delete of the test binary with counting versions.
#pragma once

#include <cstdint>

namespace turnpike::testing {

// Allocations made by the calling thread since it started.
uint64_t ThreadAllocations();

// Allocations made by every thread of the process.
uint64_t TotalAllocations();

}  // namespace turnpike::testing
