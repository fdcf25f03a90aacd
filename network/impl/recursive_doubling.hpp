#pragma once
#include "network/collective.hpp"
#include "network/topology.hpp"

namespace dtsim {

// Recursive doubling (MPICH's choice for short messages): ceil(lg p) rounds of pairwise exchanges
// at distances 1, 2, 4, ...; every round of an all-reduce moves the whole buffer:
//   all-reduce  lg p (a + n b + n g)
//   all-gather  lg p a + (p-1)/p n b        (round k sends 2^k pieces of n/p)
//   reduce-scatter (recursive halving)  lg p a + (p-1)/p n (b + g)
//   broadcast / reduce (binomial tree)  lg p (a + n b)  (+ lg p n g)
// Ranks fill nodes in order, so rounds at distance >= GPUs per node cross the network, where all
// GPUs of a node share its NICs.
class RecursiveDoublingAlgorithm : public CollectiveAlgorithm {
 public:
  std::string name() const override { return "recursive-doubling"; }
  CollectiveEstimate estimate(CollectiveOp op, double bytes, const Placement& p, const ClusterSpec& c) const override;
};

double recursive_doubling_time(CollectiveOp op, double bytes, const AlphaBeta& t);

// MPICH on a number of ranks that is no power of two: r = p - 2^floor(lg p) ranks first hand their
// data to a neighbour (one step at distance 1), the 2^floor(lg p) ranks that remain run the rounds,
// and the r get their result back in one more step. `core` prices the remaining ranks' rounds
// (fewer ranks per node); extra is r (0: nothing folded).
struct FoldedRanks {
  AlphaBeta core;
  int extra = 0;
};
FoldedRanks fold_ranks(const AlphaBeta& t);
// One fold step of `bytes` at distance 1 (reduced on arrival when `reduce`); 0 where nothing folds.
double fold_step_s(const FoldedRanks& f, double bytes, bool reduce);

// Shared pieces of the recursive algorithms: one exchange per round k at distance 2^k, carrying
// bytes_of(k) (and reducing them when `reduce`).
double recursive_rounds_time(const AlphaBeta& t, bool reduce, double (*bytes_of)(int k, double n, int p), double n);
double rounds_bytes_whole(int k, double n, int p);     // n every round
double rounds_bytes_gathered(int k, double n, int p);  // 2^k pieces of n/p: doubling all-gather
double rounds_bytes_halved(int k, double n, int p);    // n/2, n/4, ...: halving, big halves nearest

}  // namespace dtsim
