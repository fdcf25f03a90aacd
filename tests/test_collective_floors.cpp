// Every collective algorithm on every cluster preset stays above what the links allow at all: its
// bandwidth floor and its latency floor, over a grid of sizes, GPU counts and GPUs per node, and it
// never costs less for more bytes. The floors are computed here from the cluster file's links alone,
// not from any model's formulas.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "network/cluster.hpp"
#include "network/collective.hpp"
#include "network/topology.hpp"

using namespace dtsim;

namespace {

// The cheapest hop latency any library of the cluster pays over a link (NCCL's tables, MPI's, the
// textbook's, the parameter server's call).
double cheapest_hop(const ClusterSpec& c, int hw) {
  const auto& n = c.collectives.nccl;
  double m = hw == kHwNet ? std::min({c.inter.latency_s, c.collectives.mpi.latency_inter_s, c.collectives.parameter_server.latency_s})
                          : std::min(c.intra.latency_s, c.collectives.mpi.latency_s);
  const double scale = *std::min_element(n.cost_latency_scale.begin(), n.cost_latency_scale.end());
  for (const auto& a : n.hop_latency_s[hw])
    for (double x : a) m = std::min(m, x * std::min(scale, 1.0));
  return m;
}

struct Floors {
  double bandwidth_s = 0, latency_s = 0;
  std::string why;
};

// Bandwidth: every GPU sends and receives 2(p-1)/p n of an all-reduce ((p-1)/p n of an all-gather or
// reduce-scatter, n at a broadcast's root or a reduce's) through all it has: its intra-node link plus
// its share of the node's NICs (the fastest any GPU of the node could use them); with a reduction in
// the switch (NVLS) it sends n and receives n. Seen from the network, a node is one rank of N holding
// all of its GPUs' data: 2(N-1)/N n (or (N-1)/N n, or n) leaves it through its NICs, after their
// oversubscription. Latency: a reduction or broadcast over N nodes needs at least ceil(lg N) rounds
// over the network (one port a round), each at the cheapest network hop any library pays; on one
// node at least one hop inside it.
Floors floors(CollectiveOp op, double n, const Placement& w, const ClusterSpec& c, bool switch_reduction) {
  Floors f;
  const int p = w.gpus, N = w.nodes;
  const double node_net = c.inter.nics_per_node * c.inter.nic_bandwidth_Bps / c.inter.oversubscription;
  const double gpu = c.intra.bandwidth_Bps + (N > 1 ? node_net / std::max(1, std::min(w.local_gpus(), c.inter.nics_per_node)) : 0);
  double share_gpu = 1, share_node = N > 1 ? 1 : 0;
  switch (op) {
    case CollectiveOp::AllReduce:
      share_gpu = switch_reduction ? 1.0 : 2.0 * (p - 1) / p;
      share_node = 2.0 * (N - 1) / N;
      break;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
      share_gpu = switch_reduction ? 1.0 / p : double(p - 1) / p;
      share_node = double(N - 1) / N;
      break;
    default: break;
  }
  const double by_gpu = share_gpu * n / gpu, by_node = N > 1 ? share_node * n / node_net : 0;
  f.bandwidth_s = std::max(by_gpu, by_node);
  f.why = by_gpu >= by_node ? "per-GPU links" : "node's NICs";
  f.latency_s = N > 1 ? ceil_log2(N) * cheapest_hop(c, kHwNet) : cheapest_hop(c, c.intra.kind == "pcie" ? kHwPcie : kHwNvlink);
  return f;
}

bool is_switch_reduction(const std::string& chosen) { return chosen.rfind("nvls", 0) == 0; }

}  // namespace

TEST_CASE("collective floors: every algorithm and preset stays above its bandwidth and latency floors and rises with size") {
  std::vector<double> sizes;
  for (double n = 1; n <= 16.0 * (1 << 30); n *= 4) sizes.push_back(n);
  sizes.push_back(3e6);  // not a power of two
  const int counts[] = {2, 3, 4, 8, 12, 16, 64, 256, 1000, 4096};
  long checked = 0, failed = 0;
  std::ostringstream first;
  for (const auto& preset : cluster_presets()) {
    const ClusterSpec base = load_cluster(preset);
    // NVLS as the file says, and on where the node has an NVSwitch (NCCL's default there).
    for (int nvls = 0; nvls < (base.intra.kind == "nvswitch" ? 2 : 1); ++nvls)
    for (int gpn : {1, 2, 4, base.gpus_per_node}) {
      ClusterSpec c = base;
      if (nvls) c.collectives.nccl.nvls.enabled = true;
      c.gpus_per_node = gpn;
      c.nodes = (4096 + gpn - 1) / gpn;
      for (const auto& name : collective_algorithm_names()) {
        auto a = make_collective_algorithm(name);
        for (CollectiveOp op : all_collective_ops()) {
          if (!a->supports(op)) continue;
          for (int p : counts) {
            const Placement w = place(c, p);
            double prev = 0;
            for (double n : sizes) {
              const CollectiveEstimate e = a->estimate(op, n, w, c);
              const Floors f = floors(op, n, w, c, is_switch_reduction(e.algo));
              ++checked;
              std::string bad;
              if (!(e.time_s >= f.bandwidth_s * (1 - 1e-9))) bad = "below the bandwidth floor (" + f.why + ") " + std::to_string(f.bandwidth_s);
              else if (!(e.time_s >= f.latency_s * (1 - 1e-9))) bad = "below the latency floor " + std::to_string(f.latency_s);
              else if (n != 3e6 && !(e.time_s >= prev * (1 - 1e-12))) bad = "less than for fewer bytes " + std::to_string(prev);
              if (n != 3e6) prev = e.time_s;
              if (!bad.empty() && failed++ == 0)
                first << preset << (nvls ? " (nvls on)" : "") << " gpus_per_node " << gpn << " " << name << " (" << e.algo << " " << e.protocol << ") "
                      << collective_op_name(op) << " p " << p << " n " << n << ": " << e.time_s << " s " << bad;
            }
          }
        }
      }
    }
  }
  INFO(first.str());
  CHECK(checked > 100000);
  CHECK(failed == 0);
}

TEST_CASE("collective floors: the textbook tree all-reduce on one node pays two passes of the buffer") {
  const ClusterSpec c = load_cluster("h100-sxm");
  const Placement w = place(c, 8);
  const double n = 1 << 30;
  const double t = make_collective_algorithm("tree")->time_s(CollectiveOp::AllReduce, n, w, c);
  // 2(p-1)/p n / B = 4.17 ms on 450 GB/s links; two passes of n take at least 2 n / B = 4.77 ms.
  CHECK(t >= 2 * n / c.intra.bandwidth_Bps);
  CHECK(n / t * bus_bandwidth_factor(CollectiveOp::AllReduce, 8) < c.intra.bandwidth_Bps);
}
