#include "hardware/gpu_spec.hpp"

#include <map>
#include <mutex>

#include <filesystem>

#include "core/error.hpp"
#include "core/config_paths.hpp"

namespace dtsim {

namespace {

// roofline.compute_efficiency_by_math (optional): a compute efficiency per math unit, for the modes
// whose unit has its own cited figure. Each key a math mode the GPU has units for: a mode given as
// null in peak_tflops has none (a null tf32 runs on the FP32 units and takes fp32's figure).
void read_efficiency_by_math(JsonObject& roofline, GpuSpec& g) {
  if (!roofline.has("compute_efficiency_by_math")) return;
  JsonObject by = roofline.object("compute_efficiency_by_math");
  for (int m = 0; m < kMathModes; ++m) {
    const char* key = math_name(static_cast<MathMode>(m));
    if (!by.has(key)) continue;
    if (!g.native[m])
      by.fail(key, std::string("peak_tflops.") + key + " is null: this GPU has no " + key + " units" +
                       (static_cast<MathMode>(m) == MathMode::TF32 ? " (its tf32 math runs on the fp32 units: give fp32)" : ""));
    g.compute_efficiency_by_math[m] = by.number(key, 1e-3, 1.0);
  }
  by.reject_unknown();
}

}  // namespace

GpuSpec parse_gpu(JsonObject o) {
  GpuSpec g;
  g.name = o.str("name");
  o.str_or("description", "");
  if (o.has("sources")) o.raw("sources");  // citations, free-form
  JsonObject peak = o.object("peak_tflops");
  // All four modes must be named; tf32, bf16 and fp16 may be null (the GPU has no such units).
  constexpr int kFp32 = static_cast<int>(MathMode::FP32);
  g.peak_flops[kFp32] = peak.positive(math_name(MathMode::FP32), 1e6) * 1e12;
  g.native[kFp32] = true;
  for (int m = 0; m < kMathModes; ++m) {
    if (m == kFp32) continue;
    const char* key = math_name(static_cast<MathMode>(m));
    if (peak.has(key) && peak.raw(key).is_null()) {
      g.native[m] = false;
      g.peak_flops[m] = static_cast<MathMode>(m) == MathMode::TF32 ? g.peak_flops[kFp32] : 0.0;
    } else {
      g.native[m] = true;
      g.peak_flops[m] = peak.positive(key, 1e6) * 1e12;
    }
  }
  peak.reject_unknown();
  g.memory_bandwidth_Bps = o.positive("memory_bandwidth_GBps", 1e6) * 1e9;
  if (o.has("memory_GB"))
    o.fail("memory_GB",
           "renamed to memory_GiB: the capacity in GiB (2^30 bytes), as nvidia-smi counts it (an \"80 GB\" H100 has 80 GiB, "
           "81559 MiB in nvidia-smi; the old key was read as 80e9 bytes)");
  g.memory_bytes = o.positive("memory_GiB", 1e6) * 1073741824.0;
  g.sm_count = static_cast<int>(o.integer("sm_count", 1, 100000));
  g.sm_clock_Hz = o.has("sm_clock_MHz") ? o.number("sm_clock_MHz", 100, 10000) * 1e6 : 0.0;
  if (o.has("l2_cache_MB")) g.l2_cache_bytes = o.positive("l2_cache_MB", 1e6) * 1e6;
  JsonObject r = o.object("roofline");
  g.compute_efficiency = r.number("compute_efficiency", 1e-3, 1.0);
  read_efficiency_by_math(r, g);
  g.memory_efficiency = r.number("memory_efficiency", 1e-3, 1.0);
  g.kernel_overhead_s = r.number("kernel_overhead_s", 0.0, 1.0);
  r.str_or("note", "");
  r.reject_unknown();
  if (o.has("basis")) {
    g.basis = o.str("basis");
    bool known = false;
    std::string names;
    for (const char* b : kGpuBases) {
      known = known || g.basis == b;
      names += std::string(names.empty() ? "" : ", ") + b;
    }
    if (!known) o.fail("basis", "must be one of " + names + ", got '" + g.basis + "'");
  }
  g.basis_note = o.str_or("basis_note", "");
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
  // A process asks for the same presets many times (each measured compute model weighs every GPU
  // with predictors): a file is parsed again only when its size or time stamp changed. A refused
  // file is not remembered, so it is refused again with the same message.
  struct Parsed {
    std::filesystem::file_time_type written;
    std::uintmax_t bytes;
    GpuSpec gpu;
  };
  static std::mutex mu;
  static std::map<std::string, Parsed> parsed;
  std::error_code ec1, ec2;
  const auto written = std::filesystem::last_write_time(path, ec1);
  const auto bytes = std::filesystem::file_size(path, ec2);
  if (!ec1 && !ec2) {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = parsed.find(path); it != parsed.end() && it->second.written == written && it->second.bytes == bytes)
      return it->second.gpu;
  }
  Json doc = load_json_file(path);
  GpuSpec gpu = parse_gpu(JsonObject(doc, path, "$"));
  if (!ec1 && !ec2) {
    std::lock_guard<std::mutex> lock(mu);
    parsed[path] = Parsed{written, bytes, gpu};
  }
  return gpu;
}

}  // namespace dtsim
