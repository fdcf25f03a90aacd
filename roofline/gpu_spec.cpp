#include "roofline/gpu_spec.hpp"

#include <filesystem>

#include "common/error.hpp"
#include "model/model_json.hpp"

namespace dtsim {

GpuSpec parse_gpu(JsonObject o) {
  GpuSpec g;
  g.name = o.str("name");
  o.str_or("description", "");
  if (o.has("sources")) o.raw("sources");  // citations, free-form
  JsonObject peak = o.object("peak_tflops");
  for (int m = 0; m < kMathModes; ++m)
    g.peak_flops[m] = peak.positive(math_name(static_cast<MathMode>(m)), 1e6) * 1e12;
  peak.reject_unknown();
  g.memory_bandwidth_Bps = o.positive("memory_bandwidth_GBps", 1e6) * 1e9;
  g.memory_bytes = o.positive("memory_GB", 1e6) * 1e9;
  g.sm_count = static_cast<int>(o.integer("sm_count", 1, 100000));
  JsonObject r = o.object("roofline");
  g.compute_efficiency = r.number("compute_efficiency", 1e-3, 1.0);
  g.memory_efficiency = r.number("memory_efficiency", 1e-3, 1.0);
  g.kernel_overhead_s = r.number("kernel_overhead_s", 0.0, 1.0);
  r.str_or("note", "");
  r.reject_unknown();
  o.reject_unknown();
  return g;
}

GpuSpec load_gpu(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (name_or_path.find('/') == std::string::npos) {
    path = config_dir() + "/gpus/" + name_or_path + ".json";
    std::error_code ec;  // a name too long for a file name is unknown too, not a filesystem_error
    if (!std::filesystem::exists(path, ec)) throw InputError("gpu", "unknown GPU '" + name_or_path + "' (no " + path + ")");
  }
  Json doc = load_json_file(path);
  return parse_gpu(JsonObject(doc, path, "$"));
}

}  // namespace dtsim
