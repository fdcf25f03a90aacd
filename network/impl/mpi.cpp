#include "network/impl/mpi.hpp"

#include "network/impl/mpi_spec.hpp"
#include "network/impl/rabenseifner.hpp"
#include "network/impl/recursive_doubling.hpp"
#include "network/impl/ring.hpp"
#include "network/impl/spec_json.hpp"
#include "network/topology.hpp"

namespace dtsim {

MpiSpec parse_mpi_spec(JsonObject& m) {
  MpiSpec s;
  s.base_latency_s = m.number_or("base_latency_s", s.base_latency_s, 0.0, 1.0);
  s.latency_s = m.number_or("latency_s", s.latency_s, 0.0, 1.0);
  s.latency_inter_s = m.number_or("latency_inter_s", s.latency_inter_s, 0.0, 1.0);
  s.bandwidth_efficiency = share_or(m, "bandwidth_efficiency", s.bandwidth_efficiency);
  m.reject_unknown();
  return s;
}

CollectiveEstimate CudaAwareMpiAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  if (p.gpus <= 1 || bytes <= 0) return {0, name(), "", 0};
  const MpiSpec& m = c.collectives.mpi;
  AlphaBeta t = textbook_costs(p, c);
  t.base_s = m.base_latency_s;
  t.alpha_intra_s = m.latency_s;
  t.alpha_inter_s = m.latency_inter_s;
  t.beta_intra_s_per_byte /= m.bandwidth_efficiency;
  t.beta_inter_s_per_byte /= m.bandwidth_efficiency;
  t.beta_ring_s_per_byte /= m.bandwidth_efficiency;
  const std::pair<double, const char*> options[] = {
      {recursive_doubling_time(op, bytes, t), "mpi:recursive-doubling"},
      {rabenseifner_time(op, bytes, t), "mpi:rabenseifner"},
      {ring_time(op, bytes, t), "mpi:ring"},
  };
  const auto* best = &options[0];
  for (const auto& o : options)
    if (o.first < best->first) best = &o;
  return {best->first, best->second, "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"mpi", 8, "CUDA-aware MPI: recursive doubling, Rabenseifner or ring, whichever is fastest, at MPI's per-message latency (collectives.mpi)",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<CudaAwareMpiAlgorithm>(); }})

}  // namespace dtsim
