#pragma once
// Will it fit: per-GPU memory of one data-parallel training step, counted the way PyTorch holds it.
//
//   parameters          FP32 weights (plus, under autocast, the 16-bit copies of conv/linear weights
//                       that the forward pass casts and the backward pass keeps)
//   gradients           FP32, one per parameter
//   optimizer state     per parameter, from configs/memory/pytorch.json (SGD momentum: 4 bytes)
//   activations         the tensors autograd saves for the backward pass at this batch size; a
//                       tensor saved by several layers (or aliased by an in-place ReLU) counts once
//   backward transient  the gradient flowing back and the one being produced: twice the largest
//                       activation
//   workspace           the largest convolution's cuDNN workspace
//   communication       DDP's gradient buckets (a second copy of the gradients) and NCCL's buffers,
//                       with more than one GPU
//   CUDA context        outside PyTorch's allocator, but on the device all the same
//
// `allocated_peak_bytes` is what torch.cuda.max_memory_allocated() would report; `device_bytes`
// adds NCCL, the CUDA context and the allocator's reserve, and is what must fit the GPU.
#include <cstdint>
#include <string>

#include "common/json_util.hpp"
#include "model/graph.hpp"
#include "model/kernels.hpp"
#include "roofline/gpu_spec.hpp"

namespace dtsim {

struct MemorySpec {
  double optimizer_state_bytes_per_param = 4;
  bool gradient_bucket_copy = true;
  double conv_workspace_operand_factor = 1;
  double conv_workspace_max_bytes = 0;
  double nccl_buffer_bytes = 0;  // channels x per-channel buffers
  double cuda_context_bytes = 0;
  double allocator_reserve_fraction = 0;
};

MemorySpec parse_memory_spec(const Json& doc, const std::string& what);
// configs/memory/pytorch.json, read once.
const MemorySpec& default_memory_spec();

struct MemoryFit {
  double weights_bytes = 0;
  double weight_copies_bytes = 0;  // autocast's 16-bit copies
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double transient_bytes = 0;
  double workspace_bytes = 0;
  double buckets_bytes = 0;  // DDP
  double nccl_bytes = 0;
  double context_bytes = 0;
  double reserve_bytes = 0;
  double allocated_peak_bytes = 0;
  double device_bytes = 0;
  double capacity_bytes = 0;
  bool fits = true;
  std::string largest_part;  // the component that takes the most, in words
};

// Bytes of the tensors autograd keeps for the backward pass, for `batch` samples.
double saved_activation_bytes(const Graph& g, int64_t batch, Precision p);

MemoryFit memory_fit(const Graph& g, int64_t batch, Precision p, int64_t gpus, const GpuSpec& gpu,
                     const MemorySpec& spec = default_memory_spec());

Json memory_json(const MemoryFit& m);
// "23.4 GB of 80 GB (29%), fits" or "95.1 GB of 80 GB: does NOT fit (activations 70.3 GB)".
std::string memory_summary(const MemoryFit& m);

}  // namespace dtsim
