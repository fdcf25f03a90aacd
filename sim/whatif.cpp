#include "sim/whatif.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/args.hpp"
#include "core/error.hpp"
#include "core/output.hpp"

namespace dtsim {

namespace {
// Ranges of what a what-if may ask: wide enough for any study, narrow enough to stay a machine.
constexpr double kMinScale = 1e-3, kMaxScale = 1e3;
constexpr double kMaxLinkGBps = 1e6;
constexpr int kMaxGpusPerNode = 1024;
}  // namespace

bool WhatIf::is_baseline() const {
  return flops_scale == 1 && memory_bandwidth_scale == 1 && !intra_node_GBps && intra_node_bandwidth_scale == 1 && !nic_Gbps &&
         inter_node_bandwidth_scale == 1 && latency_scale == 1 && launch_overhead_scale == 1 && !gpus_per_node;
}

std::string WhatIf::label() const {
  if (!name.empty()) return name;
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  auto scale = [&](const char* what, double x) {
    if (x != 1) add(std::string(what) + " x" + fmt_sig(x, 3));
  };
  scale("FLOP/s", flops_scale);
  scale("HBM bw", memory_bandwidth_scale);
  if (intra_node_GBps) add("intra-node " + fmt_sig(*intra_node_GBps, 4) + " GB/s");
  scale("intra-node bw", intra_node_bandwidth_scale);
  if (nic_Gbps) add("NIC " + fmt_sig(*nic_Gbps, 4) + " Gb/s");
  scale("inter-node bw", inter_node_bandwidth_scale);
  scale("latency", latency_scale);
  scale("launch cost", launch_overhead_scale);
  if (gpus_per_node) add(std::to_string(*gpus_per_node) + " GPUs/node");
  return s.empty() ? "as specified" : s;
}

Json WhatIf::to_json() const {
  Json j = {{"flops_scale", flops_scale},
            {"memory_bandwidth_scale", memory_bandwidth_scale},
            {"intra_node_bandwidth_scale", intra_node_bandwidth_scale},
            {"inter_node_bandwidth_scale", inter_node_bandwidth_scale},
            {"latency_scale", latency_scale},
            {"launch_overhead_scale", launch_overhead_scale},
            {"label", label()}};
  if (intra_node_GBps) j["intra_node_GBps"] = *intra_node_GBps;
  if (nic_Gbps) j["nic_Gbps"] = *nic_Gbps;
  if (gpus_per_node) j["gpus_per_node"] = *gpus_per_node;
  return j;
}

ClusterSpec apply_what_if(const ClusterSpec& c0, const WhatIf& w) {
  ClusterSpec c = c0;
  for (double& f : c.gpu.peak_flops) f *= w.flops_scale;
  c.gpu.memory_bandwidth_Bps *= w.memory_bandwidth_scale;
  if (w.intra_node_GBps) c.intra.bandwidth_Bps = *w.intra_node_GBps * 1e9;
  c.intra.bandwidth_Bps *= w.intra_node_bandwidth_scale;
  if (w.nic_Gbps) c.inter.nic_bandwidth_Bps = *w.nic_Gbps * 1e9 / 8;
  c.inter.nic_bandwidth_Bps *= w.inter_node_bandwidth_scale;
  c.intra.latency_s *= w.latency_scale;
  c.inter.latency_s *= w.latency_scale;
  c.collectives.base_latency_s *= w.latency_scale;
  // NCCL's tuning tables, MPI's and the parameter server's costs are latencies as well.
  NcclTuning& nccl = c.collectives.nccl;
  for (auto& per_algo : nccl.base_latency_s)
    for (double& x : per_algo) x *= w.latency_scale;
  for (auto& per_hw : nccl.hop_latency_s)
    for (auto& per_algo : per_hw)
      for (double& x : per_algo) x *= w.latency_scale;
  nccl.net_overhead_s *= w.latency_scale;
  c.collectives.mpi.base_latency_s *= w.latency_scale;
  c.collectives.mpi.latency_s *= w.latency_scale;
  c.collectives.mpi.latency_inter_s *= w.latency_scale;
  c.collectives.parameter_server.latency_s *= w.latency_scale;
  c.framework.host_cost_scale *= w.launch_overhead_scale;
  c.framework.launch_overhead_s *= w.launch_overhead_scale;
  c.framework.iteration_overhead_s *= w.launch_overhead_scale;
  if (w.gpus_per_node) c.gpus_per_node = *w.gpus_per_node;
  return c;
}

const std::vector<std::string>& what_if_axes() {
  static const std::vector<std::string> axes = {"flops_scale",   "memory_bandwidth_scale", "intra_node_GBps", "intra_node_bandwidth_scale",
                                                "nic_Gbps",      "inter_node_bandwidth_scale", "latency_scale", "launch_overhead_scale",
                                                "gpus_per_node"};
  return axes;
}

const std::vector<std::string>& collective_what_if_axes() {
  static const std::vector<std::string> axes = {"memory_bandwidth_scale", "intra_node_GBps", "intra_node_bandwidth_scale", "nic_Gbps",
                                                "inter_node_bandwidth_scale", "latency_scale", "gpus_per_node"};
  return axes;
}

void set_what_if_axis(WhatIf& w, const std::string& axis, double v, const std::string& where) {
  auto in = [&](double lo, double hi) {
    if (!(std::isfinite(v) && v >= lo && v <= hi)) throw InputError(where, "must be in [" + fmt_number(lo) + ", " + fmt_number(hi) + "], got " + fmt_number(v));
  };
  if (axis == "flops_scale") in(kMinScale, kMaxScale), w.flops_scale = v;
  else if (axis == "memory_bandwidth_scale") in(kMinScale, kMaxScale), w.memory_bandwidth_scale = v;
  else if (axis == "intra_node_GBps") in(1e-3, kMaxLinkGBps), w.intra_node_GBps = v;
  else if (axis == "intra_node_bandwidth_scale") in(kMinScale, kMaxScale), w.intra_node_bandwidth_scale = v;
  else if (axis == "nic_Gbps") in(1e-3, 8 * kMaxLinkGBps), w.nic_Gbps = v;
  else if (axis == "inter_node_bandwidth_scale") in(kMinScale, kMaxScale), w.inter_node_bandwidth_scale = v;
  else if (axis == "latency_scale") in(0, kMaxScale), w.latency_scale = v;
  else if (axis == "launch_overhead_scale") in(0, kMaxScale), w.launch_overhead_scale = v;
  else if (axis == "gpus_per_node") {
    in(1, kMaxGpusPerNode);
    if (v != std::floor(v)) throw InputError(where, "must be an integer, got " + fmt_number(v));
    w.gpus_per_node = static_cast<int>(v);
  } else {
    std::string known;
    for (const auto& a : what_if_axes()) known += (known.empty() ? "" : ", ") + a;
    throw InputError(where, "unknown what-if axis '" + axis + "' (" + known + ")");
  }
}

void copy_what_if_axis(WhatIf& to, const WhatIf& from, const std::string& axis) {
  if (axis == "flops_scale") to.flops_scale = from.flops_scale;
  else if (axis == "memory_bandwidth_scale") to.memory_bandwidth_scale = from.memory_bandwidth_scale;
  else if (axis == "intra_node_GBps") to.intra_node_GBps = from.intra_node_GBps;
  else if (axis == "intra_node_bandwidth_scale") to.intra_node_bandwidth_scale = from.intra_node_bandwidth_scale;
  else if (axis == "nic_Gbps") to.nic_Gbps = from.nic_Gbps;
  else if (axis == "inter_node_bandwidth_scale") to.inter_node_bandwidth_scale = from.inter_node_bandwidth_scale;
  else if (axis == "latency_scale") to.latency_scale = from.latency_scale;
  else if (axis == "launch_overhead_scale") to.launch_overhead_scale = from.launch_overhead_scale;
  else if (axis == "gpus_per_node") to.gpus_per_node = from.gpus_per_node;
}


}  // namespace dtsim
