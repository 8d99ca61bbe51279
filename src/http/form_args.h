// FormArgs: the fields of an application/x-www-form-urlencoded body, decoded the way
// ngx.req.get_post_args() decodes them (APISIX's post_arg_NAME, reference §7.1).
//
//   "name=a+b&x=%41&x=2&flag&=lost&e="   ->   name="a b", x="A" (first of two), flag="",
//                                            e="" ("=lost" has an empty name: dropped)
//
// Pairs are split on '&'; the first '=' of a pair separates name from value (later ones are
// part of the value). Names and values are unescaped: '+' is a space, %XX a byte, and a '%'
// not followed by two hex digits stays as it is. A pair without '=' has the empty value
// (Lua reports `true` there, which has no string form). Names are case-sensitive.
//
// Parse once, then look up as often as needed: storage is kept between Parse() calls, so a
// warm object parses without allocating. Not thread-safe; one per connection.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace turnpike::http {

class FormArgs {
 public:
  // Replaces the fields with those of `body`.
  void Parse(std::string_view body);
  void Clear();

  // The first value of field `name`, or nullopt when there is none. The view stays valid
  // until the next Parse() or Clear().
  std::optional<std::string_view> Get(std::string_view name) const;

  size_t size() const { return fields_.size(); }

 private:
  struct Field {
    size_t name_begin;  // offsets into decoded_
    size_t name_len;
    size_t value_begin;
    size_t value_len;
  };
  std::string decoded_;  // names and values, unescaped, back to back
  std::vector<Field> fields_;
};

}  // namespace turnpike::http
