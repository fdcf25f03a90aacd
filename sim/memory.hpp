#pragma once
// Will it fit: per-GPU memory of one data-parallel training step, counted the way PyTorch holds it.
//
//   parameters          FP32 weights (plus, under autocast, the 16-bit copies of conv/linear weights
//                       that the forward pass casts and the backward pass keeps)
//   gradients           FP32, one per parameter
//   optimizer state     per parameter, from configs/memory/pytorch.json (SGD momentum: 4 bytes; Adam: 8)
//   activations         the tensors autograd saves for the backward pass at this batch size; a
//                       tensor saved by several layers (or aliased by an in-place ReLU) counts once
//   input data          the batches (FP32 samples, int64 labels) the training loop holds on the GPU
//   library workspace   cuBLAS/cuBLASLt workspaces PyTorch allocates once and keeps
//   backward transient  at the layer where the backward peak falls: the gradient flowing in and the
//                       one being produced
//   workspace           that layer's cuDNN workspace, if it is a convolution
//   communication       DDP's gradient buckets (a second copy of the gradients; DDP builds them at
//                       world size 1 too) and NCCL's buffers (more than one GPU)
//   CUDA context        outside PyTorch's allocator, but on the device all the same
//
// The allocated peak is the larger of two phases (zero_grad(set_to_none=True) frees the gradients
// before each forward pass):
//   backward        weights, optimizer state, buckets, input data, library workspace, plus the
//                   largest over the backward pass of: gradients made so far + saved tensors not yet
//                   freed + autocast weight copies not yet freed + gradient flow + workspace
//   optimizer step  weights, optimizer state, buckets, input data, library workspace, all gradients
//                   and the optimizer's temporaries (foreach SGD with weight decay: one gradient copy)
// `allocated_peak_bytes` is what torch.cuda.max_memory_allocated() would report; `device_bytes`
// adds NCCL, the CUDA context and the allocator's reserve, and is what must fit the GPU.
#include <cstdint>
#include <string>

#include "core/json_util.hpp"
#include "workload/graph.hpp"
#include "workload/kernels.hpp"
#include "hardware/gpu_spec.hpp"

namespace dtsim {

struct MemorySpec {
  double optimizer_state_bytes_per_param = 4;
  bool gradient_bucket_copy = true;
  double conv_workspace_operand_factor = 1;
  double conv_workspace_max_bytes = 0;
  double nccl_buffer_bytes = 0;  // channels x per-channel buffers
  double cuda_context_bytes = 0;
  double allocator_reserve_fraction = 0;
  bool ddp_buckets_on_one_gpu = true;
  double optimizer_step_temp_bytes_per_param = 0;
  // Adam and AdamW (the file's "adam" object): their state and step temporaries per parameter; the
  // two fields above are SGD's.
  double adam_state_bytes_per_param = 8;
  double adam_step_temp_bytes_per_param = 4;
  double library_workspace_bytes = 0;
  double input_batches_held = 1;
};

// How a data-parallel strategy holds the model's state (sim/strategies/sharded.hpp): DDP replicates
// everything; ZeRO and FSDP shard some of it N ways and gather a unit's parameters while it runs.
struct MemoryLayout {
  double param_shards = 1;      // FP32 parameters split this many ways (FSDP, ZeRO-3)
  double grad_shards = 1;       // FP32 gradients after their reduce-scatter (FSDP, ZeRO-2, ZeRO-3)
  double optimizer_shards = 1;  // optimizer state and its step temporaries (ZeRO-1 and up, FSDP)
  bool ddp_buckets = true;      // DDP's bucket copy of the gradients
  // Held through forward and backward besides the shards: the gathered units' FP32 parameters (the
  // unit running and the one prefetched; every unit with FSDP's grad-op sharding).
  double gathered_param_bytes = 0;
  // Held during backward: the unsharded FP32 gradients of the unit being reduce-scattered.
  double unsharded_grad_bytes = 0;
  double comm_buffer_bytes = 0;  // the strategy's own communication buffers (DeepSpeed's buckets)
  bool activation_checkpointing = false;  // saved activations only at block inputs (sim/blocks.hpp)
  // Gradient accumulation: from the second micro-batch on, the gradients (this GPU's) are alive
  // through the forward and backward passes, accumulated into rather than created.
  int grad_accum_steps = 1;
};

MemorySpec parse_memory_spec(const Json& doc, const std::string& what);
// configs/memory/pytorch.json, read once.
const MemorySpec& default_memory_spec();

struct MemoryFit {
  double weights_bytes = 0;     // FP32 parameters this GPU holds: its shard and any gathered units
  double weight_copies_bytes = 0;  // autocast's 16-bit copies
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double transient_bytes = 0;
  double output_held_bytes = 0;  // the model's output, which the training loop keeps through backward
  double workspace_bytes = 0;
  double buckets_bytes = 0;  // DDP
  double input_bytes = 0;    // batches the training loop holds on the GPU
  double library_bytes = 0;  // cuBLAS workspaces
  double step_temp_bytes = 0;
  double backward_peak_bytes = 0;
  double step_peak_bytes = 0;
  std::string peak_phase;  // "backward" or "optimizer step"
  double nccl_bytes = 0;
  double context_bytes = 0;
  double reserve_bytes = 0;
  double allocated_peak_bytes = 0;
  // Sharded strategies (MemoryLayout): the gathered units' parameters, a unit's unsharded gradients,
  // the strategy's buffers; `sharded` where the layout is not DDP's (memory_json lists them then).
  double gathered_bytes = 0, unsharded_grad_bytes = 0, comm_buffer_bytes = 0;
  bool sharded = false;
  double device_bytes = 0;
  double capacity_bytes = 0;
  bool fits = true;
  std::string largest_part;  // the component that takes the most, in words
};

// Bytes of the tensors autograd keeps for the backward pass, for `batch` samples.
double saved_activation_bytes(const Graph& g, int64_t batch, Precision p);

// input_batches_held < 0: the spec's input_batches_held (a measured run may say how many it kept).
MemoryFit memory_fit(const Graph& g, int64_t batch, Precision p, int64_t gpus, const GpuSpec& gpu,
                     const MemorySpec& spec = default_memory_spec(), double input_batches_held = -1,
                     Optimizer optimizer = Optimizer::Sgd, const MemoryLayout& layout = {});

Json memory_json(const MemoryFit& m);
// "23.4 GB of 80 GB (29%), fits" or "95.1 GB of 80 GB: does NOT fit (activations 70.3 GB)".
std::string memory_summary(const MemoryFit& m);

}  // namespace dtsim
