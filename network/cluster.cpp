#include "network/cluster.hpp"

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/config_paths.hpp"

namespace dtsim {

namespace fs = std::filesystem;

namespace {

// `gpu`: a preset name (configs/gpus/) or the GPU's own object.
GpuSpec read_gpu(JsonObject& o) {
  const Json& gpu = o.raw("gpu");
  if (gpu.is_string()) {
    try {
      return load_gpu(gpu.get<std::string>());
    } catch (const InputError& e) {
      o.fail("gpu", e.what());
    }
  }
  return parse_gpu(o.object("gpu"));
}

IntraNodeFabric read_intra_node(JsonObject& o) {
  JsonObject in = o.object("intra_node");
  IntraNodeFabric f;
  f.kind = in.str("kind");
  if (f.kind != "nvswitch" && f.kind != "nvlink" && f.kind != "pcie")
    in.fail("kind", "must be nvswitch, nvlink or pcie, got '" + f.kind + "'");
  f.bandwidth_Bps = in.positive("bandwidth_GBps", 1e6) * 1e9;
  f.latency_s = in.number("latency_s", 0.0, 1.0);
  in.reject_unknown();
  return f;
}

InterNodeNetwork read_inter_node(JsonObject& o) {
  JsonObject net = o.object("inter_node");
  InterNodeNetwork n;
  n.nics_per_node = static_cast<int>(net.integer("nics_per_node", 1, 1024));
  n.nic_bandwidth_Bps = net.positive("nic_bandwidth_Gbps", 1e6) * 1e9 / 8;
  n.latency_s = net.number("latency_s", 0.0, 1.0);
  n.oversubscription = net.number("oversubscription", 1.0, 1e3);
  net.reject_unknown();
  return n;
}

// Each library's constants are read by its own parser (network/impl/), over its own defaults.
CollectiveLibrary read_collectives(JsonObject& o) {
  JsonObject coll = o.object("collectives");
  CollectiveLibrary l;
  l.base_latency_s = coll.number("base_latency_s", 0.0, 1.0);
  l.nccl = default_nccl_tuning();
  if (coll.has("nccl")) {
    JsonObject n = coll.object("nccl");
    l.nccl = parse_nccl_tuning(n);
  }
  if (coll.has("mpi")) {
    JsonObject m = coll.object("mpi");
    l.mpi = parse_mpi_spec(m);
  }
  if (coll.has("parameter_server")) {
    JsonObject m = coll.object("parameter_server");
    l.parameter_server = parse_parameter_server_spec(m);
  }
  coll.reject_unknown();
  return l;
}

}  // namespace

ClusterSpec parse_cluster(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  ClusterSpec c;
  c.file = what;
  c.name = o.str("name");
  o.str_or("description", "");
  if (o.has("sources")) o.raw("sources");
  c.gpu = read_gpu(o);
  c.gpus_per_node = static_cast<int>(o.integer("gpus_per_node", 1, 1024));
  c.nodes = static_cast<int>(o.integer("nodes", 1, kMaxClusterNodes));
  c.intra = read_intra_node(o);
  c.inter = read_inter_node(o);
  c.collectives = read_collectives(o);

  JsonObject fw = o.object("framework");
  c.framework.name = fw.str("name");
  c.framework.launch_overhead_s = fw.number("launch_overhead_s", 0.0, 1.0);
  c.framework.iteration_overhead_s = fw.number("iteration_overhead_s", 0.0, 10.0);
  c.framework.first_bucket_bytes = static_cast<int64_t>(fw.positive("first_bucket_MiB", 1e6) * 1048576.0);
  c.framework.bucket_bytes = static_cast<int64_t>(fw.positive("bucket_MiB", 1e6) * 1048576.0);
  c.framework.overlap = fw.boolean_or("overlap", true);
  fw.str_or("note", "");
  fw.reject_unknown();
  if (o.has("price_per_gpu_hour")) c.price_per_gpu_hour = o.number("price_per_gpu_hour", 0.0, 1e9);
  c.price_source = o.str_or("price_source", "");
  o.reject_unknown();
  return c;
}

std::vector<std::string> cluster_presets() { return config_presets("clusters"); }

std::string cluster_path(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (name_or_path.find('/') == std::string::npos &&
      !(name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0)) {
    const auto preset = config_preset_file("clusters", name_or_path);
    if (!preset)
      throw InputError("--cluster", "unknown cluster '" + name_or_path + "' (presets: " + config_preset_list("clusters") +
                                        "; or give a path to a .json file)");
    path = *preset;
  }
  return path;
}

ClusterSpec load_cluster(const std::string& name_or_path) {
  const std::string path = cluster_path(name_or_path);
  return parse_cluster(load_json_file(path), path);
}

}  // namespace dtsim
