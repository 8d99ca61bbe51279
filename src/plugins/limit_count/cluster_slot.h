// Redis Cluster's key -> hash slot mapping (the cluster specification): CRC16 (XMODEM:
// polynomial 0x1021, initial value 0, no reflection) of the key modulo 16384, where a key
// holding a "{tag}" with a non-empty tag hashes only the tag, so that `{user1}:a` and
// `{user1}:b` live on one node.
//
// Any thread; pure. Cost: one table lookup per byte of the key (or of its tag).
#pragma once

#include <cstdint>
#include <string_view>

namespace turnpike::plugins::limit_count {

inline constexpr uint16_t kClusterSlots = 16384;

// CRC16/XMODEM of `data` ("123456789" -> 0x31C3).
uint16_t Crc16(std::string_view data);

// The hash slot of `key`, in [0, 16384).
uint16_t KeySlot(std::string_view key);

}  // namespace turnpike::plugins::limit_count
