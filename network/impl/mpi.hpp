#pragma once
#include "network/collective.hpp"

namespace dtsim {

// A CUDA-aware MPI (MVAPICH2-GDR-like) collective: MPI's own algorithms (recursive doubling for
// short messages, Rabenseifner and ring for long ones; the library takes the fastest) with MPI's
// per-message latency over GPUDirect, far below NCCL's per-call cost, and its pipelined copies'
// share of the link bandwidth. The sources compare it with NCCL 2: 5-17x faster for small and
// medium messages (Awan et al. 2019, docs/design.md §5, Beyond data parallelism). Constants:
// collectives.mpi.
class CudaAwareMpiAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "mpi"; }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
};

}  // namespace dtsim
