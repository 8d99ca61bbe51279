#include "plugins/request_id/id_generator.h"

#include <sys/random.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

namespace turnpike::plugins::request_id {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr char kNanoidAlphabet[] =
    "-_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
constexpr char kBase62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr uint64_t kKsuidEpoch = 1400000000;  // KSUID timestamps count from 2014-05-13

uint64_t SplitMix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t OsSeed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == static_cast<ssize_t>(sizeof(seed))) {
    return seed;
  }
  // No entropy yet (very early boot): distinct enough per thread and start.
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (std::hash<std::thread::id>()(std::this_thread::get_id()) << 1);
}

// Writes the 16 bytes as 8-4-4-4-12 lowercase hex.
void FormatUuid(const uint8_t b[16], char* out) {
  char* p = out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    *p++ = kHex[b[i] >> 4];
    *p++ = kHex[b[i] & 0xf];
  }
}

void RandomBytes(FastRandom& rng, uint8_t* out, size_t n) {
  while (n > 0) {
    uint64_t r = rng.Next();
    size_t take = n < 8 ? n : 8;
    std::memcpy(out, &r, take);
    out += take;
    n -= take;
  }
}

}  // namespace

FastRandom::FastRandom(uint64_t seed) {
  for (uint64_t& s : s_) s = SplitMix64(&seed);
}

FastRandom FastRandom::FromOs() { return FastRandom(OsSeed()); }

uint64_t FastRandom::Next() {
  // xoshiro256** (Blackman & Vigna).
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

void UuidV4(FastRandom& rng, char out[kUuidLength]) {
  uint8_t b[16];
  RandomBytes(rng, b, sizeof(b));
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  FormatUuid(b, out);
}

void UuidV7(FastRandom& rng, uint64_t unix_ms, char out[kUuidLength]) {
  uint8_t b[16];
  RandomBytes(rng, b, sizeof(b));
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(unix_ms >> (40 - 8 * i));
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x70);  // version 7
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);
  FormatUuid(b, out);
}

void Nanoid(FastRandom& rng, char out[kNanoidLength]) {
  // 64 symbols: 6 bits each, no modulo bias; one 64-bit draw gives 10 of them.
  uint64_t r = 0;
  for (size_t i = 0; i < kNanoidLength; ++i) {
    if (i % 10 == 0) r = rng.Next();
    out[i] = kNanoidAlphabet[r & 63];
    r >>= 6;
  }
}

void RangeId(FastRandom& rng, std::string_view char_set, size_t length, char* out) {
  const auto n = static_cast<uint32_t>(char_set.size());
  for (size_t i = 0; i < length; ++i) out[i] = char_set[rng.Below(n)];
}

void Ksuid(FastRandom& rng, uint64_t unix_seconds, char out[kKsuidLength]) {
  // 20 bytes: a 32-bit big-endian timestamp and 128 random bits, as one big-endian number
  // written in base 62, zero-padded to 27 digits. Kept as five 32-bit words and divided by
  // 62 once per digit.
  uint32_t words[5];
  uint64_t ts = unix_seconds > kKsuidEpoch ? unix_seconds - kKsuidEpoch : 0;
  words[0] = static_cast<uint32_t>(ts);
  uint64_t r1 = rng.Next();
  uint64_t r2 = rng.Next();
  words[1] = static_cast<uint32_t>(r1 >> 32);
  words[2] = static_cast<uint32_t>(r1);
  words[3] = static_cast<uint32_t>(r2 >> 32);
  words[4] = static_cast<uint32_t>(r2);
  for (int pos = static_cast<int>(kKsuidLength) - 1; pos >= 0; --pos) {
    uint64_t rem = 0;
    for (uint32_t& w : words) {
      uint64_t cur = (rem << 32) | w;
      w = static_cast<uint32_t>(cur / 62);
      rem = cur % 62;
    }
    out[pos] = kBase62[rem];
  }
}

}  // namespace turnpike::plugins::request_id
