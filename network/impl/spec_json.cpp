#include "network/impl/spec_json.hpp"

namespace dtsim {

double share_or(JsonObject& o, const std::string& key, double fallback) {
  if (!o.has(key)) return fallback;
  double x = o.number(key, 0.0, 1.0);
  if (!(x > 0)) o.fail(key, "must be in (0, 1]");
  return x;
}

}  // namespace dtsim
