#include "router/pattern.h"

#include <vector>

namespace turnpike::router {

UriPattern ParseUriPattern(std::string_view uri) {
  UriPattern p;
  const size_t star = uri.find('*');
  if (star == std::string_view::npos) {
    p.literal = uri;
    return p;
  }
  p.is_prefix = true;
  p.literal = uri.substr(0, star);
  // A single trailing '*' is the plain prefix form and needs no post-check.
  if (star + 1 != uri.size()) p.glob = uri.substr(star);
  return p;
}

HostPattern ParseHostPattern(std::string_view host) {
  HostPattern p;
  if (!host.empty() && host.front() == '*') {
    p.is_wildcard = true;
    p.literal = host.substr(1);
  } else {
    p.literal = host;
  }
  return p;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Greedy matching with backtracking to the last '*': O(|pattern| * |text|) worst case,
  // no recursion, no allocation.
  size_t p = 0;
  size_t t = 0;
  size_t star = std::string_view::npos;
  size_t star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace turnpike::router

namespace turnpike::router {

ParamUriPattern ParseParamUriPattern(std::string_view uri) {
  ParamUriPattern p;
  const size_t special = uri.find_first_of(":*");
  if (special == std::string_view::npos) {
    p.literal = uri;
    return p;
  }
  p.is_prefix = true;
  p.literal = uri.substr(0, special);
  p.has_check = !(uri[special] == '*' && special + 1 == uri.size());
  return p;
}

bool TokenizeParamUri(std::string_view uri, size_t from, std::vector<PathToken>* out) {
  const size_t start = out->size();
  size_t rests = 0;
  size_t literal_begin = from;
  auto flush_literal = [&](size_t end) {
    if (end > literal_begin) {
      out->push_back({PathToken::Kind::kLiteral, uri.substr(literal_begin, end - literal_begin)});
    }
  };
  size_t i = from;
  while (i < uri.size()) {
    const char c = uri[i];
    const bool segment_start = i == 0 || uri[i - 1] == '/';
    if (segment_start && (c == ':' || c == '*')) {
      // The whole segment: its first byte is the kind, the others the name.
      size_t end = uri.find('/', i);
      if (end == std::string_view::npos) end = uri.size();
      flush_literal(i);
      const auto kind = c == ':' ? PathToken::Kind::kParam : PathToken::Kind::kRest;
      out->push_back({kind, uri.substr(i + 1, end - i - 1)});
      if (kind == PathToken::Kind::kRest) ++rests;
      i = end;
      literal_begin = end;
    } else if (c == '*') {
      flush_literal(i);
      out->push_back({PathToken::Kind::kRest, {}});
      ++rests;
      literal_begin = ++i;
    } else {
      ++i;
    }
  }
  flush_literal(uri.size());
  if (rests > kMaxPathRests) {
    out->resize(start);
    return false;
  }
  return true;
}

namespace {

constexpr size_t kFail = std::string_view::npos;

// Matches the literal and parameter tokens [begin, end) at text[pos...]; returns the end
// position or kFail. Deterministic: a parameter always starts a segment and is followed by
// '/' or the end of the uri (never by a rest), so it takes the whole path segment.
size_t MatchChunk(const PathToken* tokens, size_t begin, size_t end, std::string_view text,
                  size_t pos, PathParams* params) {
  for (size_t i = begin; i < end; ++i) {
    const PathToken& t = tokens[i];
    if (t.kind == PathToken::Kind::kLiteral) {
      if (text.size() - pos < t.text.size() || text.substr(pos, t.text.size()) != t.text) {
        return kFail;
      }
      pos += t.text.size();
    } else {
      size_t segment_end = text.find('/', pos);
      if (segment_end == std::string_view::npos) segment_end = text.size();
      if (segment_end == pos) return kFail;
      if (params != nullptr) params->Add(t.text, text.substr(pos, segment_end - pos));
      pos = segment_end;
    }
  }
  return pos;
}

// The fewest bytes tokens [begin, end) can match.
size_t MinLength(const PathToken* tokens, size_t begin, size_t end) {
  size_t n = 0;
  for (size_t i = begin; i < end; ++i) {
    n += tokens[i].kind == PathToken::Kind::kLiteral ? tokens[i].text.size() : 1;
  }
  return n;
}

}  // namespace

bool MatchPathTokens(const PathToken* tokens, size_t count, std::string_view text,
                     PathParams* params) {
  // The uri is chunk_0 rest_1 chunk_1 ... rest_k chunk_k, chunks free of rests.
  size_t rests[kMaxPathRests];
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i].kind != PathToken::Kind::kRest) continue;
    if (k == kMaxPathRests) return false;
    rests[k++] = i;
  }
  if (k == 0) return MatchChunk(tokens, 0, count, text, 0, params) == text.size();

  const size_t first_end = MatchChunk(tokens, 0, rests[0], text, 0, nullptr);
  if (first_end == kFail) return false;
  // Greedy rests: rest_j must end at the largest start of chunk_j from which chunks j..k still
  // fit. Going right to left, starts[j] is the largest position where chunk_j matches and ends
  // no later than starts[j + 1] (chunk_k: exactly at the end of the text); the rest between
  // absorbs any gap. Every later rest can absorb extra bytes on its left, so that choice never
  // prevents a match, and it is what a backtracking regex picks for `(.*)`.
  size_t starts[kMaxPathRests];
  size_t limit = text.size();
  for (size_t j = k; j-- > 0;) {
    const size_t begin = rests[j] + 1;
    const size_t end = j + 1 < k ? rests[j + 1] : count;
    const size_t min_len = MinLength(tokens, begin, end);
    if (limit < min_len || limit - min_len < first_end) return false;
    size_t found = kFail;
    for (size_t g = limit - min_len + 1; g-- > first_end;) {
      const size_t e = MatchChunk(tokens, begin, end, text, g, nullptr);
      if (e != kFail && (j + 1 == k ? e == text.size() : e <= limit)) {
        found = g;
        break;
      }
    }
    if (found == kFail) return false;
    starts[j] = found;
    limit = found;
  }
  if (params == nullptr) return true;

  // Record the captures left to right with the positions chosen above.
  size_t pos = MatchChunk(tokens, 0, rests[0], text, 0, params);
  for (size_t j = 0; j < k; ++j) {
    const PathToken& rest = tokens[rests[j]];
    if (!rest.text.empty()) params->Add(rest.text, text.substr(pos, starts[j] - pos));
    const size_t end = j + 1 < k ? rests[j + 1] : count;
    pos = MatchChunk(tokens, rests[j] + 1, end, text, starts[j], params);
  }
  return true;
}

}  // namespace turnpike::router
