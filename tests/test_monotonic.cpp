// Issue 21, item 4: better hardware on any axis never predicts a slower iteration, and what the
// output calls the bottleneck (or credits with time) is a resource whose improvement changes the
// prediction. Everything here calls the library directly; sampled so the file runs in seconds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "model/model_json.hpp"
#include "model/predict.hpp"
#include "model/whatif.hpp"
#include "network/cluster.hpp"
#include "network/collective.hpp"

using namespace dtsim;

namespace {

// Floating-point noise allowed where a better value must not be slower.
constexpr double kNoise = 1e-9;

// A preset with room for 8192 GPUs.
ClusterSpec big(const std::string& preset) {
  ClusterSpec c = load_cluster(preset);
  c.nodes = std::max<int>(c.nodes, static_cast<int>((8192 + c.gpus_per_node - 1) / c.gpus_per_node));
  return c;
}

// The presets, and two variants that exercise other NCCL tables: PCIe inside the node, and a
// 2:1 oversubscribed network.
std::vector<ClusterSpec> collective_clusters() {
  std::vector<ClusterSpec> out;
  for (const char* p : {"h100-sxm", "a100-sxm", "v100-sxm2", "h200-sxm"}) out.push_back(big(p));
  ClusterSpec pcie = big("a100-sxm");
  pcie.name = "a100-pcie";
  pcie.intra.kind = "pcie";
  pcie.intra.bandwidth_Bps = 32e9;
  out.push_back(pcie);
  ClusterSpec over = big("h100-sxm");
  over.name = "h100-oversubscribed";
  over.inter.oversubscription = 2;
  out.push_back(over);
  return out;
}

// One what-if axis as a chain of values, each better hardware than the one before.
struct Axis {
  std::string name;
  std::vector<double> values;  // in order of better hardware
};

// The network axes a collective sees (the others do not reach it, except memory bandwidth through
// the textbook algorithms' reduction cost, checked with the iteration).
const std::vector<Axis>& network_axes() {
  static const std::vector<Axis> a = {
      {"intra_node_bandwidth_scale", {0.125, 0.5, 1, 2, 8}},
      {"intra_node_GBps", {20, 100, 300, 450, 900, 1800}},
      {"inter_node_bandwidth_scale", {0.125, 0.5, 1, 2, 8}},
      {"nic_Gbps", {25, 100, 200, 350, 400, 410, 450, 800, 1600}},
      {"latency_scale", {8, 2, 1, 0.5, 0.125, 0}},
  };
  return a;
}

WhatIf one_axis(const std::string& axis, double v) {
  WhatIf w;
  set_what_if_axis(w, axis, v, axis);
  return w;
}

std::string describe(const std::string& axis, double from, double to) {
  std::ostringstream s;
  s << axis << " " << from << " -> " << to;
  return s.str();
}

}  // namespace

TEST_CASE("monotonic: every collective algorithm is no slower on faster links or lower latency", "[monotonic]") {
  const std::vector<int> counts = {2, 3, 4, 8, 9, 16, 64, 128, 512, 2048, 8192};
  std::vector<double> sizes;
  for (double n = 4; n <= double(1 << 30); n *= 8) sizes.push_back(n);
  sizes.push_back(8 << 20);   // the 8 MiB all-reduce of issue 21
  sizes.push_back(25 << 20);  // DDP's bucket
  int checked = 0, failed = 0;
  std::map<std::string, std::pair<int, std::string>> breaks;  // cluster, algorithm, axis -> count, first example
  for (const ClusterSpec& base : collective_clusters())
    for (const auto& name : collective_algorithm_names()) {
      auto algo = make_collective_algorithm(name);
      for (const Axis& axis : network_axes()) {
        std::vector<ClusterSpec> cs;
        for (double v : axis.values) cs.push_back(apply_what_if(base, one_axis(axis.name, v)));
        for (CollectiveOp op : all_collective_ops()) {
          if (!algo->supports(op)) continue;
          for (int p : counts)
            for (double n : sizes) {
              double prev = algo->time_s(op, n, place(cs[0], p), cs[0]);
              for (size_t i = 1; i < cs.size(); ++i) {
                const double t = algo->time_s(op, n, place(cs[i], p), cs[i]);
                ++checked;
                if (t > prev * (1 + kNoise)) {
                  ++failed;
                  std::ostringstream what;
                  what << base.name << " " << name << " " << collective_op_name(op) << " p=" << p << " bytes=" << n << " "
                       << describe(axis.name, axis.values[i - 1], axis.values[i]) << ": " << prev << " s -> " << t << " s";
                  auto& [count, example] = breaks[base.name + " " + name + " " + axis.name];
                  if (count++ == 0) example = what.str();
                }
                prev = t;
              }
            }
        }
      }
    }
  for (const auto& [key, v] : breaks) UNSCOPED_INFO(key << ": " << v.first << " breaks, e.g. " << v.second);
  INFO(failed << " of " << checked << " comparisons slower on better hardware");
  CHECK(failed == 0);
}

TEST_CASE("monotonic: more GPUs never make a collective of the same buffer cheaper", "[monotonic]") {
  std::vector<int> counts;
  for (int p = 2; p <= 8192; p *= 2) counts.push_back(p);
  for (int p : {3, 5, 6, 7, 9, 12, 17, 24, 100}) counts.push_back(p);
  std::sort(counts.begin(), counts.end());
  std::map<std::string, std::pair<int, std::string>> breaks;
  int failed = 0;
  for (ClusterSpec c : collective_clusters())
    for (const auto& name : collective_algorithm_names()) {
      auto algo = make_collective_algorithm(name);
      // A parameter server with one server per node gains a server (and its NIC) with every node;
      // with a fixed number of servers more workers only add load.
      if (name == "ps") c.collectives.parameter_server.servers = 4;
      for (CollectiveOp op : all_collective_ops()) {
        if (!algo->supports(op)) continue;
        for (double n = 4; n <= double(1 << 30); n *= 4) {
          double prev = 0;
          int prev_p = 1;
          for (int p : counts) {
            const double t = algo->time_s(op, n, place(c, p), c);
            if (t < prev * (1 - kNoise)) {
              ++failed;
              std::ostringstream what;
              what << collective_op_name(op) << " bytes=" << n << " p " << prev_p << " -> " << p << ": " << prev << " s -> " << t << " s";
              auto& [count, example] = breaks[c.name + " " + name];
              if (count++ == 0) example = what.str();
            }
            prev = t;
            prev_p = p;
          }
        }
      }
    }
  for (const auto& [key, v] : breaks) UNSCOPED_INFO(key << ": " << v.first << " breaks, e.g. " << v.second);
  CHECK(failed == 0);
}
