#include "cli/study_flags.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/args.hpp"
#include "sim/whatif.hpp"

namespace dtsim::cli {

namespace {
const char* axis_help(const std::string& axis) {
  if (axis == "flops_scale") return "What-if: multiply the GPU's peak FLOP/s (every math mode)";
  if (axis == "memory_bandwidth_scale") return "What-if: multiply the GPU's memory bandwidth";
  if (axis == "intra_node_GBps") return "What-if: intra-node link bandwidth per GPU, one direction, GB/s";
  if (axis == "intra_node_bandwidth_scale") return "What-if: multiply the intra-node link bandwidth";
  if (axis == "nic_Gbps") return "What-if: line rate of each NIC, Gb/s";
  if (axis == "inter_node_bandwidth_scale") return "What-if: multiply the inter-node network bandwidth";
  if (axis == "latency_scale") return "What-if: multiply link latencies and the collective library's fixed cost";
  if (axis == "launch_overhead_scale") return "What-if: multiply the host's kernel-launch and per-iteration costs";
  if (axis == "gpus_per_node") return "What-if: GPUs per node";
  return "";
}
}  // namespace

std::string WhatIfFlags::flag_of(const std::string& axis) {
  std::string f = "--";
  for (char c : axis) f += c == '_' ? '-' : c;
  return f;
}

void WhatIfFlags::add_to(CLI::App* c, bool lists, const std::vector<std::string>& offered) {
  values.assign(what_if_axes().size(), "");
  options.assign(what_if_axes().size(), nullptr);
  for (size_t i = 0; i < what_if_axes().size(); ++i) {
    if (std::find(offered.begin(), offered.end(), what_if_axes()[i]) == offered.end()) continue;
    std::string help = axis_help(what_if_axes()[i]);
    if (lists) help += " (a list: 1,2,4 or 0.5..4:x2)";
    options[i] = c->add_option(flag_of(what_if_axes()[i]), values[i], help)->group("What-if hardware");
  }
}

bool WhatIfFlags::any() const {
  for (auto* o : options)
    if (o && o->count()) return true;
  return false;
}

std::vector<std::pair<std::string, std::vector<double>>> WhatIfFlags::axes() const {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (size_t i = 0; i < options.size(); ++i) {
    if (!options[i] || !options[i]->count()) continue;
    const std::string& axis = what_if_axes()[i];
    const std::string flag = flag_of(axis);
    // The axis's own bounds (set_what_if_axis) are the one rule its values are checked against.
    std::vector<double> v = parse_real_list(flag, values[i], -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    WhatIf probe;
    for (double x : v) set_what_if_axis(probe, axis, x, flag);
    out.push_back({axis, v});
  }
  return out;
}

WhatIf WhatIfFlags::single() const {
  WhatIf w;
  for (const auto& [axis, v] : axes()) {
    if (v.size() != 1) throw InputError(flag_of(axis), "takes one value here (lists are for dtsim sweep)");
    set_what_if_axis(w, axis, v[0], flag_of(axis));
  }
  return w;
}

void TrainFlags::add_to(CLI::App* c) {
  dataset_opt = c->add_option("--dataset-size", dataset_size, "Samples per epoch, for time to train (with --epochs): 1281167, 1.2e6 or 1M")->group("Time and cost to train");
  epochs_opt = c->add_option("--epochs", epochs, "Epochs, for time to train (with --dataset-size)")->group("Time and cost to train");
  price_opt = c->add_option("--price-per-gpu-hour", price, "Price of one GPU-hour, for the cost (any currency)")->group("Time and cost to train");
}

TrainGoal TrainFlags::goal(TrainGoal g) const {
  if (dataset_opt->count()) g.dataset_size = checked_dataset_size("--dataset-size", parse_count("--dataset-size", dataset_size));
  if (epochs_opt->count()) g.epochs = checked_epochs("--epochs", epochs);
  if (price_opt->count()) g.price_per_gpu_hour = checked_price("--price-per-gpu-hour", price);
  g.check(g.dataset_size ? "--epochs" : "--dataset-size", "--price-per-gpu-hour");
  return g;
}

}  // namespace dtsim::cli
