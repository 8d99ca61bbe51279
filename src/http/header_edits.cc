#include "http/header_edits.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/strings.h"

namespace turnpike::http {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

void Copy(char* to, std::string_view s) { base::CopyBytes(to, s.data(), s.size()); }

}  // namespace

namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// True when one of the 8 bytes of `x` is below `lowest` or DEL (bytes from 0x80 up are fine:
// ~x masks them out).
bool WordHasControl(uint64_t x, uint64_t below) {
  const uint64_t del = x ^ (kOnes * 0x7f);
  return ((((x - below) & ~x) | ((del - kOnes) & ~del)) & kHighs) != 0;
}

}  // namespace

bool HasControlByte(std::string_view s, unsigned char lowest) {
  const uint64_t below = kOnes * lowest;
  const size_t n = s.size();
  if (n < 8) {
    uint64_t x = kOnes * 'A';  // padding that is never a control byte
    if (n != 0) base::CopyBytes(reinterpret_cast<char*>(&x), s.data(), n);
    return WordHasControl(x, below);
  }
#if defined(__SSE2__)
  if (n >= 16) {
    // Sixteen bytes at a time: a byte is fine when lowest - byte saturates to 0 (unsigned)
    // and it is not DEL.
    const __m128i low = _mm_set1_epi8(static_cast<char>(lowest));
    const __m128i del = _mm_set1_epi8(0x7f);
    const __m128i zero = _mm_setzero_si128();
    auto bad = [&](const char* at) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
      const __m128i fine = _mm_cmpeq_epi8(_mm_subs_epu8(low, v), zero);
      return _mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi8(v, del), fine)) != 0xffff;
    };
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      if (bad(s.data() + i)) return true;
    }
    return i != n && bad(s.data() + n - 16);  // the last 16, overlapping what was checked
  }
#endif
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    if (WordHasControl(x, below)) return true;
  }
  if (i == n) return false;
  uint64_t x;  // the last 8 bytes, overlapping what was checked
  std::memcpy(&x, s.data() + n - 8, 8);
  return WordHasControl(x, below);
}

namespace {

// Push's check of a line ("name: value"): one of 16 to 32 bytes (most are) inline, as two
// overlapping sixteen-byte blocks; others through HasControlByte.
[[gnu::always_inline]] inline bool LineHasControlByte(std::string_view s) {
#if defined(__SSE2__)
  if (s.size() >= 16 && s.size() <= 32) {
    const __m128i low = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7f);
    const __m128i zero = _mm_setzero_si128();
    auto fine = [&](const char* at) {  // 0xffff when no byte is below 0x20 or DEL
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
      return _mm_movemask_epi8(
          _mm_andnot_si128(_mm_cmpeq_epi8(v, del), _mm_cmpeq_epi8(_mm_subs_epu8(low, v), zero)));
    };
    return (fine(s.data()) & fine(s.data() + s.size() - 16)) != 0xffff;
  }
#endif
  return HasControlByte(s);
}

}  // namespace

size_t FindControlByte(std::string_view s, size_t from, unsigned char lowest) {
  if (!HasControlByte(s.substr(from), lowest)) return s.size();
  for (size_t i = from; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < lowest || c == 0x7f) return i;
  }
  return s.size();
}

void AppendEscapingControls(base::StringWriter& out, std::string_view s, unsigned char lowest) {
  size_t run = 0;  // start of the bytes not yet appended
  for (size_t i = FindControlByte(s, 0, lowest); i < s.size();
       i = FindControlByte(s, run, lowest)) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.Append(s.substr(run, i - run));
    const char esc[3] = {'%', kHex[c >> 4], kHex[c & 0xf]};
    out.Append(std::string_view(esc, sizeof(esc)));
    run = i + 1;
  }
  out.Append(s.substr(run));
}

char* HeaderEdits::ReserveInNextChunk(size_t n) {
  // The next chunk; one too small for `n` is replaced (so the number of chunks stays that of
  // the busiest request).
  size_t next = chunks_.empty() ? 0 : chunk_ + 1;
  if (next == chunks_.size()) chunks_.emplace_back();
  Chunk& c = chunks_[next];
  if (c.size < n) {
    c.size = std::max(kChunkSize, n);
    c.bytes = std::make_unique_for_overwrite<char[]>(c.size);
  }
  chunk_ = next;
  used_ = n;
  return c.bytes.get();
}

void HeaderEdits::PushEscaped(HeaderEdit& e, std::string_view name, std::string_view value,
                              bool remove) {
  scratch_.clear();
  size_t name_size = 0;
  {
    base::StringWriter w(&scratch_, 3 * (name.size() + value.size()) + 4);
    AppendEscapingControls(w, name);
    name_size = w.written().size();
    if (!remove) {
      w.Append(": ");
      AppendEscapingControls(w, value);
      w.Append("\r\n");
    }
  }
  char* line = Reserve(scratch_.size());
  Copy(line, scratch_);
  e.name = std::string_view(line, name_size);
  if (remove) {
    e.value = e.safe_value = e.line = {};
  } else {
    e.value = value;
    e.safe_value = std::string_view(line + name_size + 2, scratch_.size() - name_size - 4);
    e.line = std::string_view(line, scratch_.size());
  }
}

void HeaderEdits::Push(std::string_view name, std::string_view value, bool remove, bool append) {
  if (remove) value = {};
  if (count_ == edits_.size()) edits_.emplace_back();
  HeaderEdit& e = edits_[count_];
  // Almost always clean: the line is the bytes as given, checked once whole (": " and CRLF
  // aside, every byte of it is the plugin's).
  const size_t n = remove ? name.size() : name.size() + value.size() + 4;
  char* p = Reserve(n);
  Copy(p, name);
  if (!remove) {
    char* v = p + name.size();
    v[0] = ':';
    v[1] = ' ';
    Copy(v + 2, value);
  }
  if (!LineHasControlByte(std::string_view(p, remove ? n : n - 2))) {
    e.name = std::string_view(p, name.size());
    if (remove) {
      e.value = e.safe_value = e.line = {};
    } else {
      char* v = p + name.size();
      v[2 + value.size()] = '\r';
      v[3 + value.size()] = '\n';
      e.value = e.safe_value = std::string_view(v + 2, value.size());
      e.line = std::string_view(p, n);
    }
  } else {
    // The escaped line, after the copy just made (it keeps the value as given).
    PushEscaped(e, name,
                remove ? std::string_view() : std::string_view(p + name.size() + 2, value.size()),
                remove);
  }
  e.remove = remove;
  e.append = append;
  e.superseded = false;
  const uint64_t bit = LengthBit(e.name);
  if (!append && (lengths_ & bit) != 0) {
    for (size_t i = 0; i < count_; ++i) {
      HeaderEdit& earlier = edits_[i];
      if (!earlier.superseded && base::EqualsIgnoreCase(earlier.name, e.name)) {
        earlier.superseded = true;
      }
    }
  }
  ++count_;
  lengths_ |= bit;
  if (!append) replace_lengths_ |= bit;
}

bool HeaderEdits::Touches(std::string_view name) const {
  if ((replace_lengths_ & LengthBit(name)) == 0) return false;
  for (size_t i = 0; i < count_; ++i) {
    if (!edits_[i].append && base::EqualsIgnoreCase(edits_[i].name, name)) return true;
  }
  return false;
}

const HeaderEdit* HeaderEdits::Decides(std::string_view name) const {
  if ((lengths_ & LengthBit(name)) == 0) return nullptr;
  for (size_t i = count_; i-- > 0;) {
    if (base::EqualsIgnoreCase(edits_[i].name, name)) return &edits_[i];
  }
  return nullptr;
}

}  // namespace turnpike::http
