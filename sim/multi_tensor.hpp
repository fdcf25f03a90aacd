#pragma once
// torch.optim's foreach optimizers as the GPU runs them. Each pass of a step (SGD with momentum and
// weight decay: grads + wd * params, buf *= m, buf += grads, params -= lr * buf) is one
// multi_tensor_apply call over the FP32 parameter lists, which PyTorch splits into launches
// (aten/src/ATen/native/cuda/MultiTensorApply.cuh): each thread block takes one chunk of up to
// chunk_elements of one tensor, and a launch goes out once it holds max_blocks chunks, or once it
// holds the pass's max_tensors tensors with the last one's chunks all placed; a tensor cut by a full
// launch continues in the next. A launch costs launch_s plus its bytes at bandwidth_fraction of the
// GPU's memory bandwidth: a block streams its chunk alone, so a launch of small tensors still takes
// about one chunk's time, and one of large tensors streams at nearly the datasheet rate.
// The launch counts this rule gives match torch.profiler's for every profiled model
// (docs/training-modes.md, "Optimizers").

#include <cstdint>
#include <string>
#include <vector>

#include "network/cluster.hpp"
#include "workload/kernels.hpp"

namespace dtsim {

// Elements of each launch of one pass over `tensors` (their sizes, in model.parameters() order).
std::vector<int64_t> multi_tensor_launches(const MultiTensorOptimizer& m, const MultiTensorPass& pass, const std::vector<int64_t>& tensors);

// The optimizer an update kernel belongs to: "sgd" for sgd_update, its variant (adamw, adam) for
// adam_update.
std::string update_optimizer_name(const KernelDesc& k);

// Whether `m` runs optimizer `name` (sgd, adamw, adam) as multi-tensor passes.
bool runs_multi_tensor(const MultiTensorOptimizer& m, const std::string& name);

// GPU time of one optimizer step over `tensors`: every launch of every pass.
double multi_tensor_step_s(const MultiTensorOptimizer& m, const std::string& name, const std::vector<int64_t>& tensors,
                           double memory_bandwidth_Bps);

// Bytes the passes of one optimizer step over `tensors` move: what multi_tensor_step_s streams.
double multi_tensor_step_bytes(const MultiTensorOptimizer& m, const std::string& name, const std::vector<int64_t>& tensors);

}  // namespace dtsim
