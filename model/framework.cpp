#include "model/framework.hpp"

#include <algorithm>
#include <filesystem>

#include "common/error.hpp"
#include "common/json_util.hpp"
#include "model/model_json.hpp"

namespace dtsim {
namespace fs = std::filesystem;

FrameworkProfile parse_framework(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  FrameworkProfile f;
  f.file = what;
  f.name = o.str("name");
  f.launch_overhead_s = o.number("launch_overhead_s", 0.0, 1.0);
  f.iteration_overhead_s = o.number("iteration_overhead_s", 0.0, 10.0);
  o.str_or("description", "");
  if (o.has("kernel_time_factors")) {
    const Json& k = o.raw("kernel_time_factors");
    if (!k.is_object()) o.fail("kernel_time_factors", "must be an object of predictor key -> time ratio");
    for (const auto& [key, v] : k.items()) {
      const std::string path = "kernel_time_factors." + key;
      if (std::count(key.begin(), key.end(), '/') < 2) o.fail(path, "must be a predictor key kind/pass/math[/variant]");
      if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 100) o.fail(path, "must be a number in (0, 100]");
      f.kernel_time_factors[key] = v.get<double>();
    }
  }
  if (o.has("host_cost_s")) {
    const Json& k = o.raw("host_cost_s");
    if (!k.is_object()) o.fail("host_cost_s", "must be an object of kernel key -> seconds");
    for (const auto& [key, v] : k.items()) {
      const std::string path = "host_cost_s." + key;
      if (std::count(key.begin(), key.end(), '/') < 1) o.fail(path, "must be a kernel key kind/pass[/math[/variant]]");
      if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > 1) o.fail(path, "must be a number of seconds in [0, 1]");
      f.host_cost_s[key] = v.get<double>();
    }
  }
  f.ddp_gradient_copy = o.boolean_or("ddp_gradient_copy", false);
  if (o.has("sources")) {
    const Json& s = o.raw("sources");
    if (!s.is_object()) o.fail("sources", "must be an object");
  }
  if (o.has("fit")) {
    const Json& s = o.raw("fit");
    if (!s.is_object()) o.fail("fit", "must be an object");
  }
  o.reject_unknown();
  return f;
}

std::vector<std::string> framework_presets() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_dir() + "/frameworks", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

FrameworkProfile load_framework(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (path.find('/') == std::string::npos && (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0)) {
    path = config_dir() + "/frameworks/" + name_or_path + ".json";
    std::error_code ec;  // a name too long for a file name is unknown too, not a filesystem_error
    if (!fs::exists(path, ec)) {
      std::string known;
      for (const auto& n : framework_presets()) known += (known.empty() ? "" : ", ") + n;
      throw InputError("--framework", "unknown framework profile '" + name_or_path + "' (known: " + known + ")");
    }
  }
  return parse_framework(load_json_file(path), path);
}

ClusterSpec apply_framework(ClusterSpec c, const FrameworkProfile& f) {
  c.framework.name = f.name;
  c.framework.launch_overhead_s = f.launch_overhead_s;
  c.framework.iteration_overhead_s = f.iteration_overhead_s;
  c.framework.kernel_time_factors = f.kernel_time_factors;
  c.framework.host_cost_s = f.host_cost_s;
  c.framework.ddp_gradient_copy = f.ddp_gradient_copy;
  return c;
}

}  // namespace dtsim
