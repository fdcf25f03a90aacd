#include "network/impl/nccl/nccl.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
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
  j.nvswitch = c.intra.kind == "nvswitch";
  return j;
}

namespace {

struct Steps {
  int total = 0, network = 0;
};

// Ring steps of one call and how many of them cross the network.
Steps ring_steps(CollectiveOp op, const NcclJob& j) {
  switch (op) {
    // NCCL's tables count 2 x nodes network steps, more than a ring of one GPU per node has steps
    // at all (2 nodes: 4 of 2); as a time, no more steps cross the network than the ring takes.
    case CollectiveOp::AllReduce: return {2 * (j.ranks - 1), j.nodes > 1 ? std::min(2 * j.nodes, 2 * (j.ranks - 1)) : 0};
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

// NCCL shrinks the channel count until each thread has thread_threshold bytes (ring LL: times p).
// Counted in fractions of a channel so that a larger message never costs less: between whole
// channel counts the cost is flat, as NCCL's own channel steps average out.
double channels_used(double bytes, const NcclJob& j, const NcclTuning& t, int a, int p) {
  double per_channel = t.threads[p] * t.thread_threshold_bytes[p] * (a == kNcclRing && p == kNcclLL ? j.ranks : 1);
  return std::clamp(bytes / per_channel, 1.0, static_cast<double>(t.channels));
}

// NCCL's measured correction for mid-size trees (its tree_correction table), per power of two from
// 64 bytes; 1 from 2^23 units of 64 bytes on.
int tree_correction_bin(double bytes) {
  const double units = std::floor(bytes / 64);
  return units >= 1 ? static_cast<int>(std::floor(std::log2(units))) : 0;
}

// The bandwidth part of a pair's cost for a message of `bytes`: bytes / (bandwidth x the corrections
// x the share of channels the message gets). For a tree the size correction can rise with the size
// (0.4 at 1 MiB, 1 from 512 MiB), which would make a larger message cheaper: a message is priced as
// the cheapest size at least its own, as it could be padded to that size.
double bandwidth_term_s(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int a, int p, double bw_uncorrected) {
  const double scale = t.cost_bandwidth_scale[p] * t.op_bandwidth[static_cast<int>(op)];
  auto term = [&](double n, double correction) { return n / (bw_uncorrected * correction * scale * channels_used(n, j, t, a, p) / t.channels); };
  if (a != kNcclTree) return term(bytes, 1);
  const int first = tree_correction_bin(bytes);
  double best = term(bytes, first < 23 ? t.tree_correction[p][first] : 1);
  for (int i = first + 1; i <= 23; ++i) best = std::min(best, term(64.0 * std::ldexp(1.0, i), i < 23 ? t.tree_correction[p][i] : 1));
  return best;
}

}  // namespace

double nccl_cost_s(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int a, int p) {
  if (!t.enabled[a][p] || !implements(op, a)) return -1;
  double bw = bus_bandwidth_Bps(j, t, a, p);
  if (!(bw > 0)) return -1;
  bw = a == kNcclRing ? bw / bus_bandwidth_factor(op, j.ranks) : bw * 0.5;
  double lat = latency_s(op, j, t, a, p);
  if (a == kNcclRing && p == kNcclSimple && j.nodes > 1 && op == CollectiveOp::AllReduce && bytes / (t.channels * j.ranks) >= 64)
    lat *= t.ring_simple_multinode_latency_factor;
  return lat * t.cost_latency_scale[p] + bandwidth_term_s(op, bytes, j, t, a, p, bw);
}

CollectiveEstimate nccl_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int algos) {
  if (j.ranks <= 1 || bytes <= 0) return {0, "none", "", 0};
  // NCCL's rule, least estimated time over every (algorithm, protocol), applied to the model's own
  // cost of each pair. Every pair's cost only falls as a link gets faster or a latency shorter, and so
  // does their least: a better link can never be priced slower. (NCCL itself chooses by its tables
  // before the measured corrections; choosing by those could run the pair that costs more.)
  double best = -1;
  int ba = -1, bp = -1;
  for (int a = 0; a < kNcclAlgos; ++a)
    for (int p = 0; p < kNcclProtos; ++p) {
      if (!(algos & (1 << a))) continue;
      const double s = nccl_cost_s(op, bytes, j, t, a, p);
      if (s >= 0 && (ba < 0 || s < best)) best = s, ba = a, bp = p;
    }
  CollectiveEstimate e{best, ba < 0 ? "none" : nccl_algo_name(ba), ba < 0 ? "" : nccl_proto_name(bp),
                       ba < 0 ? 0 : static_cast<int>(std::ceil(channels_used(bytes, j, t, ba, bp)))};
  if (ba < 0) e.time_s = -1;
  for (int bit : {kNcclNvlsBit, kNcclPatBit}) {
    if (!(algos & bit)) continue;
    const CollectiveEstimate o = bit == kNcclNvlsBit ? nccl_nvls_estimate(op, bytes, j, t) : nccl_pat_estimate(op, bytes, j, t);
    if (o.time_s >= 0 && (e.time_s < 0 || o.time_s < e.time_s)) e = o;
  }
  return e;
}

// NCCL's model of NVLS (tuning.cc): a bus bandwidth per channel of the NVLink rate x the NVLS
// efficiency x (channels - 1) / channels, doubled for an all-reduce (reduction and broadcast are
// pipelined through the switch); across nodes (NVLSTree) at most the network's rate, doubled on two
// nodes (each node sends half to the other), and NVLSTree's per-channel ceiling. Algorithm
// bandwidth is bus bandwidth x p / (2 (p - 1)), as for a ring; it never exceeds what a GPU's link
// can carry once each way, nor what a node's NICs can (2 (N-1)/N of the buffer leaves each node).
CollectiveEstimate nccl_nvls_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t) {
  const NcclSwitchReduction& v = t.nvls;
  if (!v.enabled || !j.nvswitch || op != CollectiveOp::AllReduce || j.local < 2 || j.ranks < 2 || bytes <= 0) return {-1, "none", "", 0};
  const double ch = v.channels;
  const double link = j.intra_bandwidth_Bps * t.link_efficiency[kHwNvlink];
  double bus = 2 * link * v.efficiency * (ch - 1) / ch;
  double lat = v.latency_s;
  double algbw_cap = link;
  if (j.nodes > 1) {
    const double net = j.node_net_bandwidth_Bps * t.link_efficiency[kHwNet];
    const int size = j.nodes == 2 ? 1 : 2;
    bus = std::min({bus, net * (j.nodes <= 2 ? 2 : 1), ch * v.tree_max_per_channel_Bps[size]});
    lat += 2 * floor_log2(j.nodes) * v.net_latency_s;
    algbw_cap = std::min(algbw_cap, net * j.nodes / (2.0 * (j.nodes - 1)));
  }
  const double algbw = std::min(bus * j.ranks / (2.0 * (j.ranks - 1)), algbw_cap);
  return {lat + bytes / algbw, j.nodes > 1 ? "nvlstree" : "nvls", "Simple", v.channels};
}

// NCCL's model of PAT (tuning.cc): a base latency, lg N network steps at a fraction of the hop
// latency and a part linear in the ranks; three quarters of the ring's Simple bus bandwidth, taken
// for the whole buffer. Only with one GPU per node.
CollectiveEstimate nccl_pat_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t) {
  const NcclPat& v = t.pat;
  if (!v.enabled || (op != CollectiveOp::AllGather && op != CollectiveOp::ReduceScatter) || j.local != 1 || j.nodes < 2 || bytes <= 0 ||
      !t.enabled[kNcclRing][kNcclSimple])
    return {-1, "none", "", 0};
  const double bus = bus_bandwidth_Bps(j, t, kNcclRing, kNcclSimple) * v.bandwidth_factor * t.cost_bandwidth_scale[kNcclSimple] *
                     t.op_bandwidth[static_cast<int>(op)];
  if (!(bus > 0)) return {-1, "none", "", 0};
  const double lat = v.base_latency_s + floor_log2(j.nodes) * t.hop_latency_s[kHwNet][kNcclRing][kNcclSimple] / v.net_latency_divisor +
                     j.ranks * v.per_rank_latency_s;
  return {lat + bytes / bus, "pat", "Simple", t.channels};
}

CollectiveEstimate NcclAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (!supports(op)) unsupported(op);
  if (p.gpus <= 1 || bytes <= 0) return {0, choice_ == TreeOnly ? "tree" : "ring", "", 0};
  const int algos = choice_ == Any ? kNcclAllAlgos : choice_ == RingOnly ? 1 << kNcclRing : 1 << kNcclTree;
  CollectiveEstimate e = nccl_estimate(op, bytes, nccl_job(p, c), c.collectives.nccl, algos);
  if (e.time_s < 0) throw InputError("--algo", name() + ": the cluster's collectives.nccl.enabled leaves no protocol for " + collective_op_name(op));
  return e;
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"auto", 0, "NCCL's own choice of algorithm (ring, tree; NVLS and NVLSTree where collectives.nccl.nvls enables them; PAT) and protocol (LL, LL128, Simple) by its tuning tables (collectives.nccl)",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<NcclAlgorithm>(NcclAlgorithm::Any); }})
DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"nccl-ring", 1, "NCCL's ring only (NCCL_ALGO=Ring), the protocol NCCL's tables choose (collectives.nccl)",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<NcclAlgorithm>(NcclAlgorithm::RingOnly); }})
DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"nccl-tree", 2, "NCCL's tree only (NCCL_ALGO=Tree; all-reduce), the protocol NCCL's tables choose (collectives.nccl)",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<NcclAlgorithm>(NcclAlgorithm::TreeOnly); }})

}  // namespace dtsim
