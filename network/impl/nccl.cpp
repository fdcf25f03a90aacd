#include "network/impl/nccl.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "network/topology.hpp"

namespace dtsim {

NcclJob nccl_job(const Placement& p, const ClusterSpec& c) {
  NcclJob j;
  j.ranks = p.gpus;
  j.nodes = p.nodes;
  j.local = p.local_gpus();
  j.intra_hw = c.intra.kind == "pcie" ? kHwPcie : kHwNvlink;
  j.intra_bandwidth_Bps = c.intra.bandwidth_Bps;
  // NCCL pairs GPUs with nearby NICs: a node with fewer GPUs than NICs uses one NIC per GPU.
  j.node_net_bandwidth_Bps = std::min(c.inter.nics_per_node, j.local) * c.inter.nic_bandwidth_Bps / c.inter.oversubscription;
  return j;
}

namespace {

struct Steps {
  int total = 0, network = 0;
};

// Ring steps of one call and how many of them cross the network.
Steps ring_steps(CollectiveOp op, const NcclJob& j) {
  switch (op) {
    case CollectiveOp::AllReduce: return {2 * (j.ranks - 1), j.nodes > 1 ? 2 * j.nodes : 0};
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: return {j.ranks - 1, j.nodes - 1};
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return {j.ranks - 1, j.nodes - 1};  // a pipelined chain
  }
  return {};
}

// Bus bandwidth of all channels for the pair, bytes per second.
double bus_bandwidth_Bps(const NcclJob& j, const NcclTuning& t, int a, int p) {
  const int size = j.nodes == 1 ? 0 : j.nodes == 2 ? 1 : 2;  // NCCL's N1 / N2 / N4 columns
  double bw = j.intra_bandwidth_Bps * t.link_efficiency[j.intra_hw];
  if (j.nodes > 1) bw = std::min(bw, j.node_net_bandwidth_Bps * t.link_efficiency[kHwNet]);
  bw *= t.algo_bandwidth[a];
  const double ch = t.channels;
  if (a == kNcclRing) {
    bw *= t.proto_bandwidth[a][p];
    if (p == kNcclLL) bw = std::min(bw, t.ll_max_bus_bandwidth_Bps[size]);
    if (p == kNcclLL128) bw = std::min(bw, ch * t.ring_ll128_max_per_channel_Bps[size]);
  } else {
    bw = std::min(bw, ch * t.tree_max_per_channel_Bps[size]) * t.proto_bandwidth[a][p];
    if (p == kNcclLL) bw = std::min(bw, t.ll_max_bus_bandwidth_Bps[size]);
    if (p == kNcclLL128) bw = std::min(bw, ch * t.tree_ll128_max_per_channel_Bps[size]);
  }
  return bw;
}

double latency_s(CollectiveOp op, const NcclJob& j, const NcclTuning& t, int a, int p) {
  double intra = t.hop_latency_s[j.intra_hw][a][p];
  const double net = t.hop_latency_s[kHwNet][a][p];
  double lat = t.base_latency_s[a][p];
  if (a == kNcclRing) {
    const Steps s = ring_steps(op, j);
    // Across nodes every step also waits for the host proxy (thrice for Simple's larger chunks).
    if (j.nodes > 1) intra = std::max(intra, t.net_overhead_s * (p == kNcclSimple ? 3 : 1));
    lat += (s.total - s.network) * intra + s.network * net;
  } else {
    lat += 2 * ((j.local - 1) * intra + floor_log2(j.nodes) * net);
  }
  return lat;
}

bool implements(CollectiveOp op, int a) { return a == kNcclRing || op == CollectiveOp::AllReduce; }

// Algorithm bandwidth of the pair with all channels, bytes per second; 0 where it cannot run.
double algo_bandwidth_Bps(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int a, int p) {
  if (!t.enabled[a][p] || !implements(op, a)) return 0;
  double bw = bus_bandwidth_Bps(j, t, a, p);
  if (a == kNcclRing) {
    bw /= bus_bandwidth_factor(op, j.ranks);  // each rank's link carries that share of the data
  } else {
    bw *= 0.5;  // a tree moves the buffer up and down
    // NCCL's measured correction for mid-size trees, per power of two from 64 bytes.
    const double units = std::floor(bytes / 64);
    const int i = units >= 1 ? static_cast<int>(std::floor(std::log2(units))) : 0;
    if (i < 23) bw *= t.tree_correction[p][i];
  }
  return bw;
}

// NCCL shrinks the channel count until each thread has thread_threshold bytes (ring LL: times p).
// Counted in fractions of a channel so that a larger message never costs less: between whole
// channel counts the cost is flat, as NCCL's own channel steps average out.
double channels_used(double bytes, const NcclJob& j, const NcclTuning& t, int a, int p) {
  double per_channel = t.threads[p] * t.thread_threshold_bytes[p] * (a == kNcclRing && p == kNcclLL ? j.ranks : 1);
  return std::clamp(bytes / per_channel, 1.0, static_cast<double>(t.channels));
}

}  // namespace

double nccl_tuning_time_s(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int a, int p) {
  const double bw = algo_bandwidth_Bps(op, bytes, j, t, a, p);
  if (!(bw > 0)) return -1;
  double lat = latency_s(op, j, t, a, p);
  // The ring's plateau across nodes, once each rank's slice of a channel passes 64 bytes.
  if (a == kNcclRing && p == kNcclSimple && j.nodes > 1 && op == CollectiveOp::AllReduce && bytes / (t.channels * j.ranks) >= 64)
    lat *= t.ring_simple_multinode_latency_factor;
  return lat + bytes / bw;
}

CollectiveEstimate nccl_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int algos) {
  if (j.ranks <= 1 || bytes <= 0) return {0, "none", "", 0};
  // NCCL's estimate of every pair, and its choice: the least.
  double tuned[kNcclAlgos][kNcclProtos], bw[kNcclAlgos][kNcclProtos];
  int ba = -1, bp = -1;
  for (int a = 0; a < kNcclAlgos; ++a)
    for (int p = 0; p < kNcclProtos; ++p) {
      tuned[a][p] = (algos & (1 << a)) ? nccl_tuning_time_s(op, bytes, j, t, a, p) : -1;
      bw[a][p] = tuned[a][p] >= 0 ? algo_bandwidth_Bps(op, bytes, j, t, a, p) : 0;
      if (tuned[a][p] >= 0 && (ba < 0 || tuned[a][p] < tuned[ba][bp])) ba = a, bp = p;
    }
  if (ba < 0) return {-1, "none", "", 0};
  // What a pair costs: measured corrections of NCCL's estimate, and a bandwidth that shrinks with
  // the channels the message is given.
  auto cost = [&](int a, int p, double* channels) {
    const double lat = tuned[a][p] - bytes / bw[a][p];
    const double nc = channels_used(bytes, j, t, a, p);
    *channels = nc;
    return lat * t.cost_latency_scale[p] + bytes / (bw[a][p] * t.cost_bandwidth_scale[p] * t.op_bandwidth[static_cast<int>(op)] * nc / t.channels);
  };
  // NCCL moves to pairs of higher bandwidth as messages grow. Where a pair it uses for larger
  // messages would cost less than its choice (its tables are not this machine), price that one:
  // a message never costs more than a larger one.
  double nc = 0;
  double time = cost(ba, bp, &nc);
  const double chosen_bw = bw[ba][bp];
  int ca = ba, cp = bp;
  for (int a = 0; a < kNcclAlgos; ++a)
    for (int p = 0; p < kNcclProtos; ++p) {
      if (!(bw[a][p] > chosen_bw)) continue;
      double other_nc = 0;
      const double s = cost(a, p, &other_nc);
      if (s < time) time = s, ca = a, cp = p, nc = other_nc;
    }
  return {time, nccl_algo_name(ca), nccl_proto_name(cp), static_cast<int>(std::ceil(nc))};
}

CollectiveEstimate NcclAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (!supports(op)) unsupported(op);
  if (p.gpus <= 1 || bytes <= 0) return {0, choice_ == TreeOnly ? "tree" : "ring", "", 0};
  const int algos = choice_ == Any ? 3 : choice_ == RingOnly ? 1 << kNcclRing : 1 << kNcclTree;
  CollectiveEstimate e = nccl_estimate(op, bytes, nccl_job(p, c), c.collectives.nccl, algos);
  if (e.time_s < 0) throw InputError("--algo", name() + ": the cluster's collectives.nccl.enabled leaves no protocol for " + collective_op_name(op));
  return e;
}

}  // namespace dtsim
