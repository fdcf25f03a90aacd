#include "sim/framework.hpp"

#include <algorithm>
#include <filesystem>

#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/output.hpp"
#include "workload/model_json.hpp"

namespace dtsim {
namespace fs = std::filesystem;

namespace {
// An optional object of kernel key -> number; a key needs at least `min_slashes` '/' (kind/pass...),
// a value lies in (lo, hi] when lo_open (a ratio), in [lo, hi] otherwise (a cost).
std::map<std::string, double> key_table(JsonObject& o, const std::string& field, long min_slashes,
                                        const std::string& key_rule, const std::string& value_what, double lo,
                                        bool lo_open, double hi, const std::string& value_rule) {
  std::map<std::string, double> table;
  if (!o.has(field)) return table;
  const Json& k = o.raw(field);
  if (!k.is_object()) o.fail(field, "must be an object of kernel key -> " + value_what);
  for (const auto& [key, v] : k.items()) {
    const std::string path = field + "." + key;
    if (std::count(key.begin(), key.end(), '/') < min_slashes) o.fail(path, "must be " + key_rule);
    const double x = v.is_number() ? v.get<double>() : -1;
    const bool low_ok = lo_open ? x > lo : x >= lo;
    if (!v.is_number() || !low_ok || !(x <= hi)) o.fail(path, value_rule);
    table[key] = x;
  }
  return table;
}

// "multi_tensor_optimizer": PyTorch's launch rule and what a launch costs, and the passes of each
// foreach optimizer (sim/multi_tensor.hpp).
MultiTensorOptimizer parse_multi_tensor(JsonObject o) {
  MultiTensorOptimizer m;
  m.chunk_elements = o.integer("chunk_elements", 1, int64_t(1) << 40);
  m.max_blocks = static_cast<int>(o.integer("max_blocks", 1, 1 << 20));
  m.launch_s = o.number("launch_s", 0, 1);
  m.bandwidth_fraction = o.number("bandwidth_fraction", 0.01, 1);
  JsonObject passes = o.object("passes");
  for (const char* name : {"sgd", "adamw", "adam"}) {
    if (!passes.has(name)) continue;
    const Json& list = passes.raw(name);
    const std::string path = passes.path_of(name);
    if (!list.is_array() || list.empty()) passes.fail(name, "must be a non-empty array of passes");
    for (size_t i = 0; i < list.size(); ++i) {
      JsonObject p = array_object(list, i, o.what(), path);
      MultiTensorPass pass;
      pass.max_tensors = static_cast<int>(p.integer("max_tensors", 1, 1 << 20));
      pass.bytes_per_param = p.number("bytes_per_param", 1, 1000);
      p.str_or("op", "");
      p.reject_unknown();
      m.passes[name].push_back(pass);
    }
  }
  passes.reject_unknown();
  o.reject_unknown();
  return m;
}
// "compiled_pooling": torch.compile's pooling kernels (sim/compiled_pool.hpp).
CompiledPooling parse_compiled_pooling(JsonObject o) {
  CompiledPooling p;
  p.bandwidth_fraction = o.number("bandwidth_fraction", 0.01, 1);
  JsonObject cost = o.object("sm_cycles_per_element");
  for (const char* key : {"max/fwd", "max/bwd", "avg/fwd", "avg/bwd"}) {
    if (!cost.has(key)) continue;
    JsonObject c = cost.object(key);
    CompiledPoolCost e;
    e.window_cycles = c.number("window", 0, 1e4);
    e.input_cycles = c.number("input", 0, 1e4);
    c.reject_unknown();
    p.cost[key] = e;
  }
  cost.reject_unknown();
  o.str_or("note", "");
  o.reject_unknown();
  return p;
}
}  // namespace

FrameworkProfile parse_framework(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  FrameworkProfile f;
  f.file = what;
  f.name = o.str("name");
  f.launch_overhead_s = o.number("launch_overhead_s", 0.0, 1.0);
  f.iteration_overhead_s = o.number("iteration_overhead_s", 0.0, 10.0);
  o.str_or("description", "");
  f.kernel_time_factors = key_table(o, "kernel_time_factors", 2, "a predictor key kind/pass/math[/variant]", "time ratio",
                                    0, true, 100, "must be a number in (0, 100]");
  f.channels_last_kernel_time_factors = key_table(o, "channels_last_kernel_time_factors", 2, "a predictor key kind/pass/math[/variant]",
                                                  "time ratio", 0, true, 100, "must be a number in (0, 100]");
  if (o.has("multi_tensor_optimizer")) f.multi_tensor_optimizer = parse_multi_tensor(o.object("multi_tensor_optimizer"));
  f.host_cost_s = key_table(o, "host_cost_s", 1, "a kernel key kind/pass[/math[/variant]]", "seconds", 0, false, 1,
                            "must be a number of seconds in [0, 1]");
  // host_cost_s as measured on a tiny input, scaled to what the same layer costs the host at the
  // models' own sizes (where the library's host path depends on the size: cuDNN's engines), per
  // layout: contiguous kernels by host_cost_shape_factors, channels_last ones by their own factors
  // where the profile has them. A key without a factor keeps its measured cost.
  const std::map<std::string, double> measured = f.host_cost_s;
  auto scaled = [&](const std::string& field) {
    std::map<std::string, double> table = measured;
    for (const auto& [key, factor] : key_table(o, field, 1, "a kernel key of host_cost_s", "ratio", 0, true, 100, "must be a number in (0, 100]")) {
      auto it = table.find(key);
      if (it == table.end()) o.fail(field + "." + key, "must be a key of host_cost_s");
      it->second *= factor;
    }
    return table;
  };
  f.host_cost_s = scaled("host_cost_shape_factors");
  if (o.has("channels_last_host_cost_shape_factors")) f.channels_last_host_cost_s = scaled("channels_last_host_cost_shape_factors");
  f.ddp_gradient_copy = o.boolean_or("ddp_gradient_copy", false);
  f.linear_bias_in_gemm = o.boolean_or("linear_bias_in_gemm", false);
  f.optimizer_update_fused = o.boolean_or("optimizer_update_fused", false);
  f.concat_copy_per_input = o.boolean_or("concat_copy_per_input", false);
  f.depthwise_conv_native = o.boolean_or("depthwise_conv_native", false);
  f.batchnorm_native_bf16 = o.boolean_or("batchnorm_native_bf16", false);
  f.relu6_input_copy = o.boolean_or("relu6_input_copy", false);
  f.host_runs_ahead = o.boolean_or("host_runs_ahead", false);
  if (o.has("compiled_ddp_split_copies")) {
    JsonObject split = o.object("compiled_ddp_split_copies");
    f.compiled_ddp_split_copy_bandwidth_fraction = split.number("bandwidth_fraction", 0.01, 1);
    split.reject_unknown();
  }
  if (o.has("compiled_pooling")) f.compiled_pooling = parse_compiled_pooling(o.object("compiled_pooling"));
  if (o.has("compiled_host")) {
    JsonObject h = o.object("compiled_host");
    f.compiled_host_as_eager = true;
    f.compiled_graph_host_s = h.number("per_graph_s", 0.0, 1.0);
    h.reject_unknown();
  }
  if (o.has("compiled_shape_padding")) {
    JsonObject pad = o.object("compiled_shape_padding");
    f.compiled_gemm_alignment_16bit = static_cast<int>(pad.integer("alignment_elements_16bit", 1, 1024));
    f.compiled_gemm_alignment_fp32 = static_cast<int>(pad.integer("alignment_elements_fp32", 1, 1024));
    if (pad.has("note") && !pad.raw("note").is_string()) pad.fail("note", "must be a string");
    pad.reject_unknown();
  }
  if (o.has("compiled_cuda_graphs_host")) {
    JsonObject h = o.object("compiled_cuda_graphs_host");
    f.replay_host_per_step_s = h.number("per_step_s", 0.0, 1.0);
    f.replay_host_per_layer_fwd_s = h.number("per_layer_fwd_s", 0.0, 0.01);
    f.replay_host_per_layer_bwd_s = h.number("per_layer_bwd_s", 0.0, 0.01);
    h.reject_unknown();
  }
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

// PyTorch is priced by default with its measured host costs (pytorch-ops: per layer type, at the
// models' sizes, the host running ahead): over the 562 committed PyTorch runs 6.3% median / 12.3%
// mean against 9.0% / 18.9% for `pytorch`, whose two host costs were fitted on four H100 runs
// (the default since 2026-11-29, commit 927d19c; docs/accuracy.md, "Framework profiles").
std::string default_framework_profile(const std::string& framework) {
  return framework == "pytorch" ? kDefaultFrameworkProfile : framework;
}

std::vector<std::string> framework_presets() { return config_presets("frameworks"); }

FrameworkProfile load_framework(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (path.find('/') == std::string::npos && (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0)) {
    const auto preset = config_preset_file("frameworks", name_or_path);
    if (!preset)
      throw InputError("--framework", "unknown framework profile '" + name_or_path + "' (known: " + config_preset_list("frameworks") + ")");
    path = *preset;
  }
  return parse_framework(load_json_file(path), path);
}

ClusterSpec apply_framework(ClusterSpec c, const FrameworkProfile& f) {
  c.framework.name = f.name;
  static_cast<FrameworkHostCosts&>(c.framework) = f;
  return c;
}

void set_bucket_mb(ClusterSpec& c, double mb, const std::string& where) {
  if (!(mb > 0) || mb > kMaxBucketMb)
    throw InputError(where, "must be greater than 0 and at most " + fmt_sig(kMaxBucketMb, 7) + " (MiB), got " + fmt_sig(mb, 6));
  // As the cluster files' framework.bucket_MiB is read (network/cluster.cpp).
  c.framework.bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(mb * 1048576.0));
}

}  // namespace dtsim
