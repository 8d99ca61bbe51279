#include "upstream/hash_key.h"

#include <string>

#include "upstream/crc32.h"

namespace turnpike::upstream {
namespace {

VarRef RemoteAddr() {
  VarRef ref;
  ref.kind = VarRef::Kind::kBuiltin;
  ref.builtin = BuiltinVar::kRemoteAddr;
  ref.source = "remote_addr";
  return ref;
}

std::optional<VarRef> Compiled(std::string_view name) {
  StatusOr<VarRef> ref = CompileVar(name);
  if (!ref.ok()) return std::nullopt;
  return std::move(ref).value();
}

}  // namespace

std::optional<HashOn> ParseHashOn(std::string_view name) {
  if (name == "vars") return HashOn::kVars;
  if (name == "header") return HashOn::kHeader;
  if (name == "cookie") return HashOn::kCookie;
  if (name == "consumer") return HashOn::kConsumer;
  if (name == "vars_combinations") return HashOn::kVarsCombinations;
  return std::nullopt;
}

HashKey::HashKey() : var_(RemoteAddr()), remote_addr_(RemoteAddr()) {}

HashKey HashKey::Compile(HashOn on, std::string_view key) {
  HashKey k;
  k.on_ = on;
  k.var_.reset();
  switch (on) {
    case HashOn::kVars:
      k.var_ = Compiled(key);
      break;
    case HashOn::kHeader:
      k.var_ = Compiled(std::string("http_").append(key));
      break;
    case HashOn::kCookie:
      k.var_ = Compiled(std::string("cookie_").append(key));
      break;
    case HashOn::kConsumer:
      break;  // no consumers yet: always missing
    case HashOn::kVarsCombinations:
      k.combination_ = Template::Compile(key);
      break;
  }
  return k;
}

uint32_t HashKey::Hash(RequestVars& vars, std::string* scratch) const {
  std::optional<std::string_view> value;
  if (on_ == HashOn::kVarsCombinations) {
    // APISIX: a template none of whose variables resolved is nil.
    if (combination_.Render(vars, scratch) != 0) value = *scratch;
  } else if (var_) {
    value = vars.Get(*var_);
  }
  if (!value) value = vars.Get(remote_addr_);
  return Crc32(value.value_or(std::string_view()));
}

}  // namespace turnpike::upstream
