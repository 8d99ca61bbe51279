#include "upstream/crc32.h"

#include <array>

namespace turnpike::upstream {
namespace {

// The reflected polynomial 0xedb88320, one entry per byte value.
constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

}  // namespace

uint32_t Crc32Update(uint32_t state, const unsigned char* data, size_t len) {
  for (size_t i = 0; i < len; ++i) state = kTable[(state ^ data[i]) & 0xffu] ^ (state >> 8);
  return state;
}

}  // namespace turnpike::upstream
