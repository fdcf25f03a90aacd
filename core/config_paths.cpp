#include "core/config_paths.hpp"

#include <cstdlib>

namespace dtsim {

std::string config_dir() {
  if (const char* env = std::getenv("DTSIM_CONFIG_DIR"); env && *env) return env;
  return DTSIM_SOURCE_CONFIG_DIR;
}

}  // namespace dtsim
