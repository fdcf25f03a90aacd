#include "network/cluster.hpp"

#include <algorithm>
#include <filesystem>

#include "common/error.hpp"
#include "model/model_json.hpp"

namespace dtsim {

namespace fs = std::filesystem;

ClusterSpec parse_cluster(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  ClusterSpec c;
  c.file = what;
  c.name = o.str("name");
  o.str_or("description", "");
  if (o.has("sources")) o.raw("sources");
  const Json& gpu = o.raw("gpu");
  if (gpu.is_string()) {
    try {
      c.gpu = load_gpu(gpu.get<std::string>());
    } catch (const InputError& e) {
      o.fail("gpu", e.what());
    }
  } else {
    c.gpu = parse_gpu(o.object("gpu"));
  }
  c.gpus_per_node = static_cast<int>(o.integer("gpus_per_node", 1, 1024));
  c.nodes = static_cast<int>(o.integer("nodes", 1, 1 << 20));

  JsonObject in = o.object("intra_node");
  c.intra.kind = in.str("kind");
  if (c.intra.kind != "nvswitch" && c.intra.kind != "nvlink" && c.intra.kind != "pcie")
    in.fail("kind", "must be nvswitch, nvlink or pcie, got '" + c.intra.kind + "'");
  c.intra.bandwidth_Bps = in.positive("bandwidth_GBps", 1e6) * 1e9;
  c.intra.latency_s = in.number("latency_s", 0.0, 1.0);
  in.reject_unknown();

  JsonObject net = o.object("inter_node");
  c.inter.nics_per_node = static_cast<int>(net.integer("nics_per_node", 1, 1024));
  c.inter.nic_bandwidth_Bps = net.positive("nic_bandwidth_Gbps", 1e6) * 1e9 / 8;
  c.inter.latency_s = net.number("latency_s", 0.0, 1.0);
  c.inter.oversubscription = net.number("oversubscription", 1.0, 1e3);
  net.reject_unknown();

  JsonObject coll = o.object("collectives");
  c.collectives.base_latency_s = coll.number("base_latency_s", 0.0, 1.0);
  coll.reject_unknown();

  JsonObject fw = o.object("framework");
  c.framework.name = fw.str("name");
  c.framework.launch_overhead_s = fw.number("launch_overhead_s", 0.0, 1.0);
  c.framework.iteration_overhead_s = fw.number("iteration_overhead_s", 0.0, 10.0);
  c.framework.first_bucket_bytes = static_cast<int64_t>(fw.positive("first_bucket_MiB", 1e6) * 1048576.0);
  c.framework.bucket_bytes = static_cast<int64_t>(fw.positive("bucket_MiB", 1e6) * 1048576.0);
  c.framework.overlap = fw.boolean_or("overlap", true);
  fw.str_or("note", "");
  fw.reject_unknown();
  o.reject_unknown();
  return c;
}

std::vector<std::string> cluster_presets() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_dir() + "/clusters", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

ClusterSpec load_cluster(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (name_or_path.find('/') == std::string::npos &&
      !(name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0)) {
    path = config_dir() + "/clusters/" + name_or_path + ".json";
    if (!fs::exists(path)) {
      std::string known;
      for (const auto& n : cluster_presets()) known += (known.empty() ? "" : ", ") + n;
      throw InputError("--cluster", "unknown cluster '" + name_or_path + "' (presets: " + known + "; or give a path to a .json file)");
    }
  }
  return parse_cluster(load_json_file(path), path);
}

}  // namespace dtsim
