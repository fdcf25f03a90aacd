#include "sim/strategies/grid.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "network/topology.hpp"

namespace dtsim {
namespace {

// The GPUs of one column (Pr consecutive ranks): inside a node while Pr <= GPUs per node, else whole
// nodes; no two columns share a link.
Placement column_placement(const ClusterSpec& c, int pr) {
  Placement p;
  p.gpus = pr;
  p.gpus_per_node = std::min(pr, c.gpus_per_node);
  p.nodes = (pr + c.gpus_per_node - 1) / c.gpus_per_node;
  return p;
}

// The GPUs of one row (ranks r, r + Pr, r + 2Pr, ...): Pr rows run at once and share each node's
// network min(Pr, GPUs per node) ways.
struct RowGroup {
  Placement where;
  ClusterSpec c;
};
RowGroup row_group(const ClusterSpec& c, int pr, int pc) {
  RowGroup r{Placement{}, c};
  const int per_node = std::max(1, c.gpus_per_node / pr);  // this row's GPUs on one node
  r.where.gpus = pc;
  r.where.gpus_per_node = std::min(per_node, pc);
  r.where.nodes = (pc + r.where.gpus_per_node - 1) / r.where.gpus_per_node;
  r.c.gpus_per_node = r.where.gpus_per_node;
  r.c.inter.nic_bandwidth_Bps = c.inter.nic_bandwidth_Bps / std::min(pr, c.gpus_per_node);
  return r;
}

// One neighbour exchange of `bytes` inside a column (halo rows).
double halo_s(double bytes, const Placement& column, const ClusterSpec& c) {
  const AlphaBeta t = textbook_costs(column, c);
  // A column that spans nodes has neighbours across the network at its node boundaries; those
  // exchanges are the slowest and every GPU waits for them.
  return column.nodes > 1 ? t.alpha_inter_s + bytes * t.beta_inter_s_per_byte : t.alpha_intra_s + bytes * t.beta_intra_s_per_byte;
}

}  // namespace

GridPoint grid_point(const Graph& g, const ClusterSpec& c, const CollectiveAlgorithm& algo, Precision precision, int64_t global_batch, int pr,
                     int pc, bool domain, const IterationTimeline& column_step) {
  GridPoint gp;
  gp.pr = pr;
  gp.pc = pc;
  gp.batch_per_column = global_batch / pc;
  const double b = static_cast<double>(gp.batch_per_column);
  const double act_bytes = (precision == Precision::BF16 || precision == Precision::FP16) ? 2 : 4;  // autocast activations
  const double grad_bytes = 4;                                                                   // FP32 gradients
  const Placement column = column_placement(c, pr);
  const RowGroup row = row_group(c, pr, pc);
  const Placement all = [&] {
    Placement p;
    p.gpus = pr * pc;
    p.gpus_per_node = std::min(p.gpus, c.gpus_per_node);
    p.nodes = (p.gpus + c.gpus_per_node - 1) / c.gpus_per_node;
    return p;
  }();
  auto coll = [&](CollectiveOp op, double bytes, const Placement& w, const ClusterSpec& cs) {
    return w.gpus > 1 && bytes > 0 ? algo.time_s(op, bytes, w, cs) : 0.0;
  };

  for (const Layer& l : g.layers) {
    const double params = static_cast<double>(l.params());
    const bool conv = l.op == Op::Conv2d, fc = l.op == Op::Linear;
    if (conv && domain) {
      // Rows split over the column: each pass swaps ⌊k/2⌋ rows of the input with both neighbours.
      if (pr > 1 && !l.in.empty()) {
        const double halo_rows = static_cast<double>(l.kh / 2);
        const double halo_bytes = halo_rows * static_cast<double>(l.in[0].w * l.in[0].c) * b * act_bytes;
        gp.activation_comm_s += 2 /*passes*/ * 2 /*neighbours*/ * (halo_rows > 0 ? halo_s(halo_bytes, column, c) : 0);
      }
      gp.weight_comm_s += coll(CollectiveOp::AllReduce, params * grad_bytes, all, c);  // weights replicated on all P
    } else if ((conv || fc) && !l.in.empty()) {
      const double d_out = static_cast<double>(l.out.elements()), d_in = static_cast<double>(l.in[0].elements());
      gp.activation_comm_s += coll(CollectiveOp::AllGather, b * d_out * act_bytes, column, c);
      gp.activation_comm_s += coll(CollectiveOp::AllReduce, b * d_in * act_bytes, column, c);
      gp.weight_comm_s += coll(CollectiveOp::AllReduce, params * grad_bytes / pr, row.where, row.c);
    } else if (params > 0) {
      // Batchnorm's scale and shift: split with their channels over the column (replicated over all
      // P under domain parallelism), summed over the row.
      gp.weight_comm_s += domain ? coll(CollectiveOp::AllReduce, params * grad_bytes, all, c)
                                 : coll(CollectiveOp::AllReduce, params * grad_bytes / pr, row.where, row.c);
    }
  }
  gp.comm_s = gp.activation_comm_s + gp.weight_comm_s;
  // The column's kernels split over its Pr GPUs; host costs stay whole.
  gp.compute_s = column_step.compute_s / pr;
  gp.step_s = column_step.iteration_s - column_step.compute_s + gp.compute_s + gp.comm_s;
  return gp;
}

std::vector<GridPoint> grid_points(const Graph& g, const ClusterSpec& c, const CollectiveAlgorithm& algo, Precision precision, int64_t global_batch,
                                   int gpus, bool domain, const std::function<IterationTimeline(int64_t)>& column_step) {
  std::vector<GridPoint> out;
  for (int pr = 1; pr <= gpus; ++pr) {
    if (gpus % pr) continue;
    const int pc = gpus / pr;
    if (global_batch % pc) continue;
    out.push_back(grid_point(g, c, algo, precision, global_batch, pr, pc, domain, column_step(global_batch / pc)));
  }
  if (out.empty()) throw InputError("--batch", "no factorisation Pr x Pc = " + std::to_string(gpus) + " has Pc dividing the batch " + std::to_string(global_batch));
  return out;
}

const GridPoint& best_grid_point(const std::vector<GridPoint>& points) {
  return *std::min_element(points.begin(), points.end(), [](const GridPoint& a, const GridPoint& b) { return a.step_s < b.step_s; });
}

std::string GridStrategy::trade_off() const {
  return "nothing in accuracy; wider collectives of activations every layer (all-gathers and all-reduces in each column, halo exchanges with "
         "--domain) in exchange for smaller weight all-reduces; communication is not overlapped";
}

StrategyOutcome GridStrategy::predict(const StrategyContext& ctx) const {
  const int P = ctx.where.gpus;
  const int64_t B = ctx.batch_per_gpu * P;
  const StrategyParams& sp = ctx.params;
  if (sp.pr < 0) throw InputError("--pr", "must be >= 1");
  if (sp.pc < 0) throw InputError("--pc", "must be >= 1");
  GridPoint gp;
  if (sp.pr > 0 || sp.pc > 0) {
    const int pr = sp.pr > 0 ? sp.pr : (P % sp.pc == 0 ? P / sp.pc : 0);
    const int pc = sp.pc > 0 ? sp.pc : (P % sp.pr == 0 ? P / sp.pr : 0);
    if (pr * pc != P) throw InputError(sp.pr > 0 ? "--pr" : "--pc", "Pr x Pc must equal --gpus (" + std::to_string(P) + ")");
    gp = grid_point(ctx.g, ctx.c, ctx.algo, ctx.precision, B, pr, pc, sp.domain, ctx.single_gpu(B / pc));
  } else {
    gp = best_grid_point(grid_points(ctx.g, ctx.c, ctx.algo, ctx.precision, B, P, sp.domain, ctx.single_gpu));
  }
  StrategyOutcome o;
  o.name = name();
  o.trade_off = trade_off();
  o.step_s = gp.step_s;
  o.compute_s = gp.compute_s;
  o.comm_s = gp.comm_s;
  o.exposed_comm_s = gp.comm_s;
  o.comm_share = gp.step_s > 0 ? std::min(1.0, gp.comm_s / gp.step_s) : 0;
  o.parameters = {{"pr", gp.pr}, {"pc", gp.pc}, {"global_batch", static_cast<double>(B)}, {"domain", sp.domain ? 1 : 0},
                  {"activation_comm_s", gp.activation_comm_s}, {"weight_comm_s", gp.weight_comm_s}};
  return o;
}

DTSIM_REGISTER(StrategyRegistry, {"grid", 8,  // rank: the order of `dtsim strategies` (sim/strategy.hpp)
                                  "integrated model/batch parallelism on a Pr x Pc grid (Pr splits each layer's weights, Pc the batch); --domain splits convolutions spatially",
                                  [] { return std::make_unique<GridStrategy>(); }})

}  // namespace dtsim
