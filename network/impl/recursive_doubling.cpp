#include "network/impl/recursive_doubling.hpp"

#include <algorithm>

namespace dtsim {

double recursive_rounds_time(const AlphaBeta& t, bool reduce, double (*bytes_of)(int k, double n, int p), double n) {
  double s = 0;
  const int rounds = ceil_log2(t.ranks);
  for (int k = 0; k < rounds; ++k) {
    const int d = 1 << k;
    const double b = bytes_of(k, n, t.ranks);
    s += t.alpha(d) + b * t.beta(d) + (reduce ? b * t.gamma_s_per_byte : 0);
  }
  return s;
}

double rounds_bytes_whole(int, double n, int) { return n; }
// All-gather by doubling: round k sends what the rank has gathered so far, 2^k pieces of n/p.
double rounds_bytes_gathered(int k, double n, int p) { return std::min<double>(1 << k, p - (1 << k)) * n / p; }
// Reduce-scatter by halving, distance doubling (the big halves stay inside a node): n/2, n/4, ...;
// the last round takes what is left of (p-1)/p n, which keeps the sum exact when p is no power of 2.
double rounds_bytes_halved(int k, double n, int p) {
  const int rounds = ceil_log2(p);
  if (k + 1 < rounds) return n / (2 << k);
  return n * (1.0 / (1 << (rounds - 1)) - 1.0 / p);
}

FoldedRanks fold_ranks(const AlphaBeta& t) {
  FoldedRanks f;
  f.core = t;
  const int core = 1 << floor_log2(t.ranks);
  f.extra = t.ranks - core;
  if (f.extra == 0) return f;
  f.core.ranks = core;
  // The ranks that stay, per node: rounds at distance >= this many of them cross the network.
  f.core.local = 1 << floor_log2(std::max<int>(1, static_cast<int>(static_cast<long long>(t.local) * core / t.ranks)));
  return f;
}

double fold_step_s(const FoldedRanks& f, double bytes, bool reduce) {
  if (f.extra == 0 || bytes <= 0) return 0;
  const AlphaBeta& t = f.core;
  return t.alpha(1) + bytes * t.beta(1) + (reduce ? bytes * t.gamma_s_per_byte : 0);
}

double recursive_doubling_time(CollectiveOp op, double bytes, const AlphaBeta& t) {
  if (t.ranks <= 1 || bytes <= 0) return 0;
  const FoldedRanks f = fold_ranks(t);
  const AlphaBeta& c = f.core;
  const double piece = bytes / t.ranks;
  switch (op) {
    case CollectiveOp::AllReduce:
      return t.base_s + fold_step_s(f, bytes, true) + recursive_rounds_time(c, true, rounds_bytes_whole, bytes) + fold_step_s(f, bytes, false);
    case CollectiveOp::AllGather:
      return t.base_s + fold_step_s(f, piece, false) + recursive_rounds_time(c, false, rounds_bytes_gathered, bytes) + fold_step_s(f, bytes, false);
    case CollectiveOp::ReduceScatter:
      return t.base_s + fold_step_s(f, bytes, true) + recursive_rounds_time(c, true, rounds_bytes_halved, bytes) + fold_step_s(f, piece, false);
    case CollectiveOp::Broadcast: return t.base_s + recursive_rounds_time(t, false, rounds_bytes_whole, bytes);
    case CollectiveOp::Reduce: return t.base_s + recursive_rounds_time(t, true, rounds_bytes_whole, bytes);
  }
  return 0;
}

CollectiveEstimate RecursiveDoublingAlgorithm::estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const {
  return {recursive_doubling_time(op, bytes, textbook_costs(p, c)), name(), "", 0};
}

DTSIM_REGISTER(CollectiveAlgorithmRegistry, {"recursive-doubling", 5, "recursive doubling (MPICH's choice for short messages) on the cluster's own alpha-beta-gamma costs",
                                             []() -> std::unique_ptr<CollectiveAlgorithm> { return std::make_unique<RecursiveDoublingAlgorithm>(); }})

}  // namespace dtsim
