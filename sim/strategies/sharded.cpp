#include "sim/strategies/sharded.hpp"

#include <algorithm>

#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "sim/blocks.hpp"

namespace dtsim {

double allreduce_wire_bytes(double bytes, int n) { return n > 1 ? 2.0 * (n - 1) / n * bytes : 0; }
double allgather_wire_bytes(double bytes, int n) { return n > 1 ? static_cast<double>(n - 1) / n * bytes : 0; }

std::string ShardedStrategy::name() const {
  switch (kind_) {
    case Zero1: return "zero1";
    case Zero2: return "zero2";
    case Zero3: return "zero3";
    default: return "fsdp";
  }
}

std::string ShardedStrategy::trade_off() const {
  switch (kind_) {
    case Zero1: return "nothing in accuracy; the updated parameters all-gathered after each optimizer step, which nothing overlaps";
    case Zero2: return "nothing in accuracy; zero1's all-gather, and with gradient accumulation a reduce-scatter every micro-batch";
    case Zero3: return "nothing in accuracy; 1.5x DDP's bytes, every unit's parameters gathered twice and its gradients reduced every micro-batch";
    default: return "nothing in accuracy; more bytes than DDP (1.5x with full sharding), each unit waiting for its parameters where the gathers outrun the compute";
  }
}

ShardedStrategy::Shard ShardedStrategy::shard(const StrategyParams& params) const {
  if (kind_ == Zero3) return Shard::Full;
  std::string s = params.shard;
  if (s.empty()) {
    const Json& d = strategy_defaults();
    const std::string where = config_dir() + "/strategies.json";
    if (!d.contains("fsdp") || !d["fsdp"].contains("shard") || !d["fsdp"]["shard"].is_string())
      throw InputError(where, "$.fsdp.shard must be full, grad-op or hybrid");
    s = d["fsdp"]["shard"].get<std::string>();
  }
  if (s == "full") return Shard::Full;
  if (s == "grad-op") return Shard::GradOp;
  if (s == "hybrid") return Shard::Hybrid;
  throw InputError(params.shard.empty() ? config_dir() + "/strategies.json" : std::string("--shard"),
                   "must be full, grad-op or hybrid, got '" + s + "'");
}

namespace {

// A unit FSDP (or ZeRO-3) gathers as one: a block, or the root (the layers outside every block).
struct Unit {
  double param_bytes = 0;  // FP32
  double fwd_s = 0, bwd_s = 0;
};

struct Units {
  std::vector<Unit> blocks;  // forward order
  Unit root;
  double pre_fwd_s = 0, pre_bwd_s = 0;    // root layers before the first block (embeddings)
  double post_fwd_s = 0, post_bwd_s = 0;  // after the last (final norm, head, loss)
  double largest_bytes = 0;                // the largest block's parameters
};

Units units_of(const Graph& g, const IterationTimeline* t) {
  const std::vector<LayerBlock> blocks = layer_blocks(g);
  const std::vector<int> of = block_of_layers(g, blocks);
  Units u;
  u.blocks.resize(blocks.size());
  const int first = blocks.empty() ? static_cast<int>(g.layers.size()) : blocks.front().first;
  for (int i = 0; i < static_cast<int>(g.layers.size()); ++i) {
    const double bytes = 4.0 * static_cast<double>(g.layers[i].params());
    const double f = t ? t->layers[i].fwd_s : 0, b = t ? t->layers[i].bwd_s : 0;
    if (of[i] >= 0) {
      Unit& x = u.blocks[of[i]];
      x.param_bytes += bytes;
      x.fwd_s += f;
      x.bwd_s += b;
      continue;
    }
    u.root.param_bytes += bytes;
    if (i < first) {
      u.pre_fwd_s += f;
      u.pre_bwd_s += b;
    } else {
      u.post_fwd_s += f;
      u.post_bwd_s += b;
    }
  }
  for (const Unit& x : u.blocks) u.largest_bytes = std::max(u.largest_bytes, x.param_bytes);
  return u;
}

// A unit's collectives' times.
struct UnitComm {
  double gather_s = 0, reduce_s = 0;  // all-gather of its parameters; its gradients' reduction
};

// The per-unit schedule of one micro-batch (sharded.hpp): returns when the compute stream and the
// communication stream are both done, and the compute time it ran.
struct Pipeline {
  double end_s = 0, compute_s = 0, comm_s = 0;
};

Pipeline run_units(const Units& u, const UnitComm& root, const std::vector<UnitComm>& blocks, bool gather_in_backward, bool reduce) {
  Pipeline p;
  double comm = root.gather_s, gpu = 0;  // the root gathered first, kept to the end of the backward
  p.comm_s += root.gather_s;
  gpu = std::max(gpu, comm) + u.pre_fwd_s;
  const size_t n = u.blocks.size();
  std::vector<double> start(n, 0);
  // Forward: unit i's all-gather issued once unit i - 1 starts computing (one unit prefetched).
  double prev_start = 0;
  for (size_t i = 0; i < n; ++i) {
    const double issue = std::max(comm, i == 0 ? 0.0 : prev_start);
    comm = issue + blocks[i].gather_s;
    p.comm_s += blocks[i].gather_s;
    start[i] = std::max(gpu, comm);
    gpu = start[i] + u.blocks[i].fwd_s;
    prev_start = start[i];
  }
  gpu += u.post_fwd_s;
  const double post_bwd_start = gpu;
  gpu += u.post_bwd_s;
  // Backward, last unit first: its all-gather again (full sharding) issued as the unit after it
  // starts its backward (BACKWARD_PRE), its reduction as its backward ends.
  prev_start = post_bwd_start;
  for (size_t k = n; k-- > 0;) {
    double ready = gpu;
    if (gather_in_backward) {
      const double issue = std::max(comm, prev_start);
      comm = issue + blocks[k].gather_s;
      p.comm_s += blocks[k].gather_s;
      ready = std::max(gpu, comm);
    }
    prev_start = ready;
    gpu = ready + u.blocks[k].bwd_s;
    if (reduce) {
      comm = std::max(comm, gpu) + blocks[k].reduce_s;
      p.comm_s += blocks[k].reduce_s;
    }
  }
  gpu += u.pre_bwd_s;
  if (reduce) {
    comm = std::max(comm, gpu) + root.reduce_s;
    p.comm_s += root.reduce_s;
  }
  p.compute_s = u.pre_fwd_s + u.post_fwd_s + u.post_bwd_s + u.pre_bwd_s;
  for (const Unit& x : u.blocks) p.compute_s += x.fwd_s + x.bwd_s;
  p.end_s = std::max(gpu, comm);
  return p;
}

}  // namespace

StrategyOutcome ShardedStrategy::predict(const StrategyContext& ctx) const {
  const Placement& w = ctx.where;
  const int N = w.gpus;
  const IterationTimeline one = ctx.single_gpu(ctx.batch_per_gpu);
  StrategyOutcome o;
  o.name = name();
  o.trade_off = trade_off();
  // After the backward on one GPU: the optimizer and the step's own overhead; the optimizer runs
  // over this GPU's shard only.
  const double tail_s = one.iteration_s - one.backward_end_s;
  const double sharded_tail_s = tail_s - one.optimizer_s * (1 - 1.0 / N);

  if (kind_ == Zero1 || kind_ == Zero2) {
    // DDP's buckets reduce-scattered as the backward fills them (DeepSpeed's overlap_comm), the
    // optimizer on this GPU's shard, then the updated parameters all-gathered, exposed.
    const double params_bytes = 4.0 * static_cast<double>(ctx.g.params());
    auto rs = [&](double bytes) { return ctx.algo.time_s(CollectiveOp::ReduceScatter, bytes, w, ctx.c); };
    const IterationTimeline t = ctx.simulate(rs);
    const double gather_s = ctx.algo.time_s(CollectiveOp::AllGather, params_bytes, w, ctx.c);
    o.step_s = t.iteration_s - t.optimizer_s * (1 - 1.0 / N) + gather_s;
    o.compute_s = t.compute_s - t.optimizer_s * (1 - 1.0 / N);
    o.comm_s = t.comm_s + gather_s;
    o.exposed_comm_s = t.exposed_comm_s + gather_s;
    o.comm_bytes = 2 * allgather_wire_bytes(params_bytes, N);
    if (kind_ == Zero2) {  // gradients sharded: every micro-batch reduce-scatters its own
      o.micro_step_s = t.backward_end_s + t.exposed_comm_s;  // the backward and the reduction it waits for
      o.micro_comm_bytes = allgather_wire_bytes(params_bytes, N);
      o.micro_comm_s = t.comm_s;
      o.micro_exposed_comm_s = t.exposed_comm_s;
    }
    o.parameters = {{"shards", N}};
  } else {
    const Shard s = shard(ctx.params);
    const Units u = units_of(ctx.g, &one);
    // Hybrid: shards among the node's GPUs, the shards all-reduced among the nodes (one ring per
    // local rank, sharing the node's NICs: rails_allreduce_s).
    const bool hybrid = s == Shard::Hybrid;
    const Placement group = hybrid ? node_placement(w) : w;
    const int G = group.gpus;
    auto gather = [&](double bytes) { return ctx.algo.time_s(CollectiveOp::AllGather, bytes, group, ctx.c); };
    auto reduce = [&](double bytes) {
      return ctx.algo.time_s(CollectiveOp::ReduceScatter, bytes, group, ctx.c) + (hybrid ? rails_allreduce_s(bytes, w, ctx.c, ctx.algo) : 0.0);
    };
    auto comm_of = [&](double bytes) { return UnitComm{gather(bytes), reduce(bytes)}; };
    const UnitComm root = comm_of(u.root.param_bytes);
    std::vector<UnitComm> blocks;
    for (const Unit& x : u.blocks) blocks.push_back(comm_of(x.param_bytes));
    const bool again = s != Shard::GradOp;  // full and hybrid gather each unit again for its backward
    const Pipeline step = run_units(u, root, blocks, again, true);
    // A micro-batch before the step's last: FSDP's no_sync skips the reduce-scatter; ZeRO-3 reduces
    // every micro-batch's gradients into its shard.
    const bool reduce_every = kind_ == Zero3;
    const Pipeline micro = run_units(u, root, blocks, again, reduce_every);
    const double overhead_s = one.backward_end_s - step.compute_s;  // host waits, launches outside the units
    o.step_s = step.end_s + overhead_s + sharded_tail_s;
    o.compute_s = one.compute_s - one.optimizer_s * (1 - 1.0 / N);
    o.comm_s = step.comm_s;
    o.exposed_comm_s = std::max(0.0, step.end_s - step.compute_s);
    o.micro_step_s = micro.end_s + overhead_s;
    const double all = 4.0 * static_cast<double>(ctx.g.params());
    const double gathered = again ? 2 * all - u.root.param_bytes : all;
    const int nodes = w.nodes;
    const double across = hybrid && nodes > 1 ? allreduce_wire_bytes(all / G, nodes) : 0;
    o.comm_bytes = allgather_wire_bytes(gathered, G) + allgather_wire_bytes(all, G) + across;
    o.micro_comm_bytes = allgather_wire_bytes(gathered, G) + (reduce_every ? allgather_wire_bytes(all, G) + across : 0);
    o.micro_comm_s = micro.comm_s;
    o.micro_exposed_comm_s = std::max(0.0, micro.end_s - micro.compute_s);
    o.parameters = {{"shards", G}, {"units", static_cast<double>(u.blocks.size() + 1)}};
    if (kind_ == Fsdp) o.parameters.push_back({"shard_grad_op", s == Shard::GradOp ? 1 : 0});
    if (hybrid) o.parameters.push_back({"replicas", nodes});
  }
  o.comm_share = o.step_s > 0 ? std::min(1.0, o.comm_s / o.step_s) : 0;
  return o;
}

MemoryLayout ShardedStrategy::memory_layout(const Graph& g, const Placement& where, const StrategyParams& params, int grad_accum_steps) const {
  MemoryLayout m;
  m.ddp_buckets = false;
  const double all = 4.0 * static_cast<double>(g.params());
  const int N = where.gpus;
  if (kind_ == Zero1 || kind_ == Zero2) {
    m.optimizer_shards = N;
    if (kind_ == Zero2) m.grad_shards = N;
    // DeepSpeed's reduce and all-gather buckets (configs/strategies.json), FP32 here, at most the model.
    const double elements = strategy_default("zero", "reduce_bucket_size") + strategy_default("zero", "allgather_bucket_size");
    m.comm_buffer_bytes = std::min(2 * all, 4.0 * elements);
    return m;
  }
  const Shard s = shard(params);
  const int G = s == Shard::Hybrid ? node_placement(where).gpus : N;
  const Units u = units_of(g, nullptr);
  m.param_shards = m.grad_shards = m.optimizer_shards = G;
  // FSDP under no_sync (the micro-batches before the last) skips the reduce-scatter and accumulates
  // unsharded gradients (PyTorch's FSDP docs, no_sync: "more GPU memory"); ZeRO-3 reduces every
  // micro-batch and keeps its shard.
  if (kind_ == Fsdp && grad_accum_steps > 1) m.grad_shards = 1;
  // The root unit stays gathered from its forward to the end of its backward; besides it, the unit
  // computing and the one prefetched (grad-op: every unit, gathered once and kept).
  const double rest = u.root.param_bytes * (1 - 1.0 / G);
  m.gathered_param_bytes = s == Shard::GradOp ? all * (1 - 1.0 / G) : rest + 2 * u.largest_bytes * (1 - 1.0 / G);
  m.unsharded_grad_bytes = u.blocks.empty() ? u.root.param_bytes : u.largest_bytes;
  if (kind_ == Zero3) {
    m.comm_buffer_bytes = std::min(all, 4.0 * strategy_default("zero", "reduce_bucket_size"));
  }
  return m;
}

// Ranks: after the strategies of sim/strategy.hpp's list.
DTSIM_REGISTER(StrategyRegistry, {"fsdp", 11,
                                  "sharded data parallelism (PyTorch FSDP): --shard full (each block's parameters all-gathered for its forward and its backward, gradients reduce-scattered), grad-op or hybrid (sharded inside a node, all-reduced across nodes)",
                                  [] { return std::make_unique<ShardedStrategy>(ShardedStrategy::Fsdp); }})
DTSIM_REGISTER(StrategyRegistry, {"zero1", 12,
                                  "DeepSpeed ZeRO stage 1: optimizer state sharded; gradients reduce-scattered during the backward, updated parameters all-gathered after the step",
                                  [] { return std::make_unique<ShardedStrategy>(ShardedStrategy::Zero1); }})
DTSIM_REGISTER(StrategyRegistry, {"zero2", 13, "DeepSpeed ZeRO stage 2: zero1 with the gradients sharded too",
                                  [] { return std::make_unique<ShardedStrategy>(ShardedStrategy::Zero2); }})
DTSIM_REGISTER(StrategyRegistry, {"zero3", 14,
                                  "DeepSpeed ZeRO stage 3: parameters, gradients and optimizer state sharded; each block gathered for its forward and backward (as fsdp --shard full)",
                                  [] { return std::make_unique<ShardedStrategy>(ShardedStrategy::Zero3); }})

}  // namespace dtsim
