#pragma once
// Hardware what-ifs: a cluster as it is, with some of its numbers changed ("links twice as fast",
// "a GPU with 4x the FLOP/s"). Scales multiply the preset's values; absolute values replace them.
#include <optional>
#include <string>
#include <vector>

#include "core/json_util.hpp"
#include "network/cluster.hpp"

namespace dtsim {

struct WhatIf {
  std::string name;                          // a scenario's own name, if it has one
  double flops_scale = 1;                    // every math mode's peak FLOP/s
  double memory_bandwidth_scale = 1;         // GPU memory (HBM) bandwidth
  std::optional<double> intra_node_GBps;     // per GPU, one direction (replaces the preset's)
  double intra_node_bandwidth_scale = 1;     // applied after intra_node_GBps
  std::optional<double> nic_Gbps;            // per NIC line rate (replaces the preset's)
  double inter_node_bandwidth_scale = 1;     // applied after nic_Gbps
  double latency_scale = 1;                  // link latencies and the collective library's fixed cost
  double launch_overhead_scale = 1;          // host time per kernel launch and per iteration
  std::optional<int> gpus_per_node;

  bool is_baseline() const;
  // The changes in words: "flops x2, inter-node bw x0.5"; "as specified" for none; the name if set.
  std::string label() const;
  Json to_json() const;
};

ClusterSpec apply_what_if(const ClusterSpec& c, const WhatIf& w);

// The axis names a sweep file's "what_if" object and the sweep flags accept.
const std::vector<std::string>& what_if_axes();
// The axes that reach a collective's time, in what_if_axes()' order: the links, their latencies, the
// node size and GPU memory bandwidth (the textbook algorithms' reduction). FLOP/s and host launch
// costs do not, so `dtsim collective` does not offer them.
const std::vector<std::string>& collective_what_if_axes();
// Sets one axis of `w` to `value`; InputError(where) when out of range.
void set_what_if_axis(WhatIf& w, const std::string& axis, double value, const std::string& where);

// Copies one axis's value from `from` to `to`.
void copy_what_if_axis(WhatIf& to, const WhatIf& from, const std::string& axis);


}  // namespace dtsim
