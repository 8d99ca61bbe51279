// CRC-32 (IEEE 802.3, zlib's and nginx's ngx_crc32): the hash of consistent hashing, chosen
// because APISIX's chash (lua-resty-chash) hashes keys and builds its ring with it, so a key
// lands on the node APISIX would pick (upstream/chash.h).
//
// Pure functions, any thread. Table-driven, one table lookup per byte; no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace turnpike::upstream {

// The running state after `data`, starting from `state` (kCrc32Init for a fresh hash).
// Crc32Final(Crc32Update(kCrc32Init, a + b)) == Crc32Final(Crc32Update(Crc32Update(kCrc32Init,
// a), b)).
inline constexpr uint32_t kCrc32Init = 0xffffffffu;
uint32_t Crc32Update(uint32_t state, const unsigned char* data, size_t len);
inline uint32_t Crc32Final(uint32_t state) { return state ^ 0xffffffffu; }
namespace crc32_internal {
// kSliced[k][b]: the CRC state change of byte b followed by k zero bytes (crc32.cc).
extern const std::array<std::array<uint32_t, 256>, 4> kSliced;
}  // namespace crc32_internal

// Crc32Update over the four little-endian bytes of `word`, in one step (slicing by 4): what a
// ring point costs (upstream/chash.h). Inline, so that a ring build can interleave several
// independent chains of these.
inline uint32_t Crc32UpdateWord(uint32_t state, uint32_t word) {
  const uint32_t x = state ^ word;
  const auto& t = crc32_internal::kSliced;
  return t[3][x & 0xffu] ^ t[2][(x >> 8) & 0xffu] ^ t[1][(x >> 16) & 0xffu] ^ t[0][x >> 24];
}

// The CRC-32 of `data` (crc32("123456789") == 0xcbf43926).
inline uint32_t Crc32(std::string_view data) {
  return Crc32Final(
      Crc32Update(kCrc32Init, reinterpret_cast<const unsigned char*>(data.data()), data.size()));
}

}  // namespace turnpike::upstream
