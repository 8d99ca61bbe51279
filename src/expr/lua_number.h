// Lua's number <-> string conversions, as lua-resty-expr relies on them (LuaJIT semantics).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace turnpike::expr {

// tonumber(s) for a string: optional surrounding whitespace, an optional sign, then a decimal
// number ("12", "-1.5", ".5", "5.", "1e3"), a hexadecimal one ("0x1F", "0x1.8p1") or
// "inf"/"infinity"/"nan" (any case). nullopt for anything else. Allocation-free.
std::optional<double> LuaToNumber(std::string_view s);

// tostring(v) for a number: "%.14g" ("5", "0.1", "1e+20").
std::string LuaNumberToString(double v);

}  // namespace turnpike::expr
