#pragma once
// Sharded data parallelism: PyTorch FSDP (Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully
// Sharded Data Parallel", VLDB 2023; docs.pytorch.org/docs/stable/fsdp.html) and DeepSpeed's ZeRO
// stages (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", SC 2020). Every GPU computes its own micro-batch as in DDP; what differs is which of the
// FP32 parameters, gradients and optimizer state each GPU keeps (1/N of them, sharded N ways) and
// the collectives that move them (docs/strategies.md has each one's bytes and memory):
//   fsdp --shard full     each unit (a block, sim/blocks.hpp; the rest is the root unit) all-gathered
//                         before its forward and again before its backward, its gradients
//                         reduce-scattered after it: 3 (N-1)/N x 4 bytes per parameter, 1.5x DDP
//   fsdp --shard grad-op  gathered once before the forward and kept through the backward (ZeRO-2-like)
//   fsdp --shard hybrid   full sharding inside each node, the gradient shards all-reduced across nodes
//   zero1                 optimizer state sharded; gradients reduce-scattered, updated parameters
//                         all-gathered after the optimizer step: 2 (N-1)/N x 4, DDP's bytes
//   zero2                 zero1 with the gradients sharded too
//   zero3                 parameters sharded too, gathered per unit as FSDP's full sharding does
// The per-unit schedule: one communication stream, each unit's all-gather prefetched while the unit
// before it computes (FSDP's forward and BACKWARD_PRE prefetch), each reduce-scatter issued as the
// unit's backward ends; the compute stream waits where a unit's parameters have not arrived.
#include "sim/strategy.hpp"

namespace dtsim {

class ShardedStrategy : public Strategy {
 public:
  enum Kind { Fsdp, Zero1, Zero2, Zero3 };
  enum class Shard { Full, GradOp, Hybrid };
  explicit ShardedStrategy(Kind k) : kind_(k) {}
  std::string name() const override;
  std::string trade_off() const override;
  StrategyParams own_params(const StrategyParams& given) const override {
    StrategyParams p;
    if (kind_ == Fsdp) p.shard = given.shard;
    return p;
  }
  StrategyOutcome predict(const StrategyContext& ctx) const override;
  MemoryLayout memory_layout(const Graph& g, const Placement& where, const StrategyParams& params, int grad_accum_steps) const override;

  // The sharding a strategy runs: fsdp's --shard (configs/strategies.json's default), zero3's full.
  Shard shard(const StrategyParams& params) const;

 private:
  Kind kind_;
};

// Bytes one GPU sends in a bandwidth-optimal all-reduce of S bytes among n GPUs, 2 (n - 1) / n S, and
// in an all-gather (or reduce-scatter) of S bytes in all, (n - 1) / n S.
double allreduce_wire_bytes(double bytes, int n);
double allgather_wire_bytes(double bytes, int n);

}  // namespace dtsim
