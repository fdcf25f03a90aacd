#include "core/config_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace dtsim {

std::string config_dir() {
  if (const char* env = std::getenv("DTSIM_CONFIG_DIR"); env && *env) return env;
  return DTSIM_SOURCE_CONFIG_DIR;
}

std::vector<std::string> config_presets(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(config_dir() + "/" + folder, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> config_preset_file(const std::string& folder, const std::string& name) {
  const std::string path = config_dir() + "/" + folder + "/" + name + ".json";
  std::error_code ec;  // a name too long for a file name is unknown, not a filesystem_error
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return path;
}

std::string config_preset_list(const std::string& folder) {
  std::string known;
  for (const auto& n : config_presets(folder)) known += (known.empty() ? "" : ", ") + n;
  return known;
}

}  // namespace dtsim
