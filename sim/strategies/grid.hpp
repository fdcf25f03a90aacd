#pragma once
// Integrated model/batch/domain parallelism (Gholami et al., SPAA'18; docs/design.md §5, Beyond
// data parallelism). The P GPUs form a Pr x Pc grid: Pc columns split the batch (B/Pc samples
// each), the Pr GPUs of a column split each layer's weights. Per layer i with d_i outputs and
// d_(i-1) inputs per sample:
//   forward  all-gather of the outputs in the column:        AG(Pr, B·d_i/Pc)
//   backward all-reduce of the input gradients in the column: AR(Pr, B·d_(i-1)/Pc)
//   weights  all-reduce of the weight gradients in the row:   AR(Pc, |W_i|/Pr)
// Pr = 1 is pure batch (data) parallelism, Pc = 1 pure model parallelism. Convolutions are split the
// same way (by output channels, d = C·H·W per sample) unless `domain`: then the Pr GPUs of a column
// split each image's rows, exchange halos of ⌊k/2⌋ rows with each neighbour per pass, and
// all-reduce the full weight gradient over all P GPUs. Layers without weights (activations,
// pooling, batchnorm) follow their input's layout and communicate nothing; the layout changes
// between layers are not charged (the paper's model does not charge them either). As in the paper,
// communication is not overlapped with computation, and the kernels of a layer split evenly over
// Pr (ideal: smaller GEMMs run less efficiently, which the roofline would not see anyway).
#include <vector>

#include "sim/strategy.hpp"

namespace dtsim {

struct GridPoint {
  int pr = 1, pc = 1;
  int64_t batch_per_column = 0;  // B / Pc
  double compute_s = 0;          // kernels of one GPU: the column's step divided over Pr
  double activation_comm_s = 0;  // all-gathers, all-reduces and halo exchanges of activations
  double weight_comm_s = 0;      // weight-gradient all-reduces
  double comm_s = 0;
  double step_s = 0;
};

// One factorisation. `column_step` is one GPU's step at B/Pc samples without communication.
GridPoint grid_point(const Graph& g, const ClusterSpec& c, const CollectiveAlgorithm& algo, Precision precision, int64_t global_batch, int pr,
                     int pc, bool domain, const IterationTimeline& column_step);
// Every Pr x Pc = P with Pc dividing the batch, Pr ascending.
std::vector<GridPoint> grid_points(const Graph& g, const ClusterSpec& c, const CollectiveAlgorithm& algo, Precision precision, int64_t global_batch,
                                   int gpus, bool domain, const std::function<IterationTimeline(int64_t)>& column_step);
// The point with the least step time.
const GridPoint& best_grid_point(const std::vector<GridPoint>& points);

class GridStrategy : public Strategy {
 public:
  std::string name() const override { return "grid"; }
  std::string trade_off() const override;
  StrategyParams own_params(const StrategyParams& given) const override {
    StrategyParams p;
    p.pr = given.pr;
    p.pc = given.pc;
    p.domain = given.domain;
    return p;
  }
  // The global batch is batch_per_gpu x P; --pr/--pc pick the grid, else the best one.
  StrategyOutcome predict(const StrategyContext& ctx) const override;
  bool uses_overlap() const override { return false; }  // its communication is not overlapped
};

}  // namespace dtsim
