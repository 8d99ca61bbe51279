// Typing of plain (unquoted) YAML scalars the way APISIX's YAML loader, lyaml, does it:
// YAML 1.1 implicit resolution (null, yes/no/on/off booleans, octal, hexadecimal, binary,
// sexagesimal and `_`-separated numbers, .inf/.nan).
//
// Internal to config/. Pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace turnpike::config {

struct PlainScalar {
  enum Kind { kNull, kBool, kInt, kNumber, kString };
  Kind kind = kString;
  bool b = false;
  int64_t i = 0;  // kInt
  double d = 0;   // kNumber (may be infinite or NaN: `.inf`, `.nan`)
};

// Resolves a plain scalar's text, trying lyaml's implicit resolvers in lyaml's order:
//   null     "", ~, null, Null, NULL
//   octal    [-+]?0_*[0-7][0-7_]*                  0755 -> 493
//   decimal  [-+]?_*[0-9][0-9_]*                   1_000 -> 1000, 089 -> 89
//   float    a Lua number containing `.`, `e` or `E` (underscores removed): 1.5, 1e3, .5, 5.
//   bool     true/false, yes/no, on/off (lower, Capitalized or UPPER)
//   inf/nan  [-+]?.inf, .nan (and their Capitalized/UPPER forms)
//   hex      [-+]?0x_*[0-9a-fA-F][0-9a-fA-F_]*      0x1F -> 31
//   binary   [-+]?0b_*[01][01_]+                    0b101 -> 5 (at least two digits, as lyaml)
//   sexagesimal [-+]?[0-9]+:[0-5]?[0-9][:0-9]*     1:30 -> 90; with a .fraction -> number
// Anything else is a string. Integers that do not fit int64 become numbers (lyaml works with
// doubles throughout).
PlainScalar ResolvePlainScalar(std::string_view text);

// Lua's tonumber() on a string, as APISIX applies it to JSON values after environment
// substitution: surrounding whitespace, decimal integers, decimal floats and 0x hex integers.
// Returns kInt, kNumber, or kString when the text is not a number.
PlainScalar LuaToNumber(std::string_view text);

}  // namespace turnpike::config
