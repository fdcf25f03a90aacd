#pragma once
// The CUDA-aware MPI algorithm's constants (collectives.mpi of a cluster file); its formulas are in
// mpi.hpp beside this file.
#include "core/json_util.hpp"

namespace dtsim {

// CUDA-aware MPI (MVAPICH2-GDR-like): MPI's algorithms with its own, lower, per-message latency.
// Unset fields keep these orders of magnitude (docs/cluster-format.md says where they come from).
struct MpiSpec {
  double base_latency_s = 1.0e-6;     // per call
  double latency_s = 1.5e-6;          // per message between GPUs of a node
  double latency_inter_s = 3.0e-6;    // per message across the network
  double bandwidth_efficiency = 0.8;  // share of a link's rate its pipelined copies reach
};
// A collectives.mpi object over the defaults above.
MpiSpec parse_mpi_spec(JsonObject& m);

}  // namespace dtsim
