#pragma once
#include "network/collective.hpp"
#include "network/impl/nccl/tuning.hpp"

namespace dtsim {

// NCCL's choice (`auto`), after the structure of NVIDIA/nccl src/graph/tuning.cc and enqueue.cc:
// for every (algorithm, protocol) pair, a latency
//   ring  base + (steps - network steps) hop_intra + network steps hop_net
//   tree  base + 2 ((g - 1) hop_intra + lg N hop_net)
// and a bus bandwidth (channels x link rate x link efficiency, times the algorithm's and the
// protocol's factors, within NCCL's per-generation ceilings), turned into algorithm bandwidth
// (ring: p / steps, tree: 1/2, tree corrected by size). A pair costs its latency and bytes over its
// bandwidth, each times the measured cost corrections, with the channels NCCL gives the message
// (small messages get fewer: each thread must get thread_threshold bytes). The pair that runs is
// the one of least cost: NCCL's own rule (least latency + bytes / bandwidth) applied to the model's
// cost, so that a faster link or a shorter latency never predicts a slower collective. (NCCL
// chooses by its uncorrected tables; where those disagree with the measured costs the model takes
// the cheaper pair.) Tables: collectives.nccl. NVLS and NVLSTree (collectives.nccl.nvls, off unless
// the cluster enables it: the validation runs disable NVLS) and PAT join the choice under `auto`;
// CollNet is not modelled.
class NcclAlgorithm : public CollectiveAlgorithm {
 public:
  enum Choice { Any, RingOnly, TreeOnly };  // `auto`, and NCCL_ALGO=Ring / Tree for what-if studies
  explicit NcclAlgorithm(Choice c) : choice_(c) {}
  std::string name() const override { return choice_ == Any ? "auto" : choice_ == RingOnly ? "nccl-ring" : "nccl-tree"; }
  bool supports(CollectiveOp op) const override { return choice_ != TreeOnly || op == CollectiveOp::AllReduce; }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;

 private:
  Choice choice_;
};

// What NCCL's model needs of a job: its shape and raw link rates.
struct NcclJob {
  int ranks = 1, nodes = 1, local = 1;
  int intra_hw = kHwNvlink;          // NVLink/NVSwitch or PCIe inside a node
  double intra_bandwidth_Bps = 0;    // one GPU's intra-node link, one direction
  double node_net_bandwidth_Bps = 0; // the NICs a node's GPUs can use, after oversubscription
  bool nvswitch = false;             // GPUs of a node on an NVSwitch (NVLS can reduce in the switch)
};

// Algorithms beyond ring and tree, as bits of nccl_estimate's `algos`: NVLS / NVLSTree (all-reduce on
// NVSwitch nodes, where collectives.nccl.nvls enables it) and PAT (all-gather and reduce-scatter, one
// GPU per node).
constexpr int kNcclNvlsBit = 4, kNcclPatBit = 8, kNcclAllAlgos = 15;
// NVLS (one node) or NVLSTree (across nodes) for an all-reduce of `bytes`; < 0 where it does not run.
CollectiveEstimate nccl_nvls_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t);
// PAT for an all-gather or reduce-scatter of `bytes`; < 0 where it does not run.
CollectiveEstimate nccl_pat_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t);
NcclJob nccl_job(const Placement& p, const ClusterSpec& c);

// What one (algorithm, protocol) pair costs for `bytes`, with the channels the message gets; < 0
// where the pair is disabled or does not implement `op`. Never less for more bytes, never more for
// a faster link or a shorter latency.
double nccl_cost_s(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int algo, int proto);
// The pair of least cost among `algos` (bits 1 << kNcclTree, 1 << kNcclRing), and what it costs.
CollectiveEstimate nccl_estimate(CollectiveOp op, double bytes, const NcclJob& j, const NcclTuning& t, int algos = 3);

}  // namespace dtsim
