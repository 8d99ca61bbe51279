#include "plugins/echo/echo.h"

namespace turnpike::plugins::echo {

void EchoPlugin::HeaderFilter(PluginContext& ctx) const {
  ctx.MarkBodyModified();  // every valid config changes the body
  for (const auto& [name, value] : config_.headers) ctx.SetResponseHeader(name, value);
}

void EchoPlugin::BodyFilter(PluginContext&, BodyPiece& piece) const {
  std::string_view middle = piece.data;
  if (config_.body) {
    if (!piece.first) {  // the replacement went out with the first piece
      piece.data = {};
      piece.last = true;
      return;
    }
    middle = *config_.body;
    piece.last = true;  // ngx.arg[2] = true: the body ends here
  }
  bool prepend = config_.before_body && piece.first;
  bool append = config_.after_body && piece.last;
  if (!prepend && !append && !config_.body) return;  // pass through untouched
  std::string& out = *piece.out;
  out.clear();
  if (prepend) out.append(*config_.before_body);
  out.append(middle);
  if (append) out.append(*config_.after_body);
  piece.data = out;
}

}  // namespace turnpike::plugins::echo
