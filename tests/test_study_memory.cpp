// Memory fit, checked against counts made by hand on the small test model (tests/data/tiny.json).
#include <catch2/catch.hpp>

#include <algorithm>

#include "helpers.hpp"
#include "sim/memory.hpp"
#include "sim/predict.hpp"

using namespace dtsim;

// Only the model's own tensors: no context, NCCL, reserve; a workspace as large as it asks.
static MemorySpec bare() {
  MemorySpec s;
  s.optimizer_state_bytes_per_param = 4;
  s.gradient_bucket_copy = true;
  s.conv_workspace_operand_factor = 1;
  s.conv_workspace_max_bytes = 1e12;
  s.nccl_buffer_bytes = 1000;
  s.cuda_context_bytes = 0;
  s.allocator_reserve_fraction = 0;
  s.ddp_buckets_on_one_gpu = false;
  s.optimizer_step_temp_bytes_per_param = 0;
  s.library_workspace_bytes = 0;
  s.input_batches_held = 1;
  return s;
}

TEST_CASE("memory: saved activations of the tiny model, counted by hand") {
  // Per sample, in FP32: the input 3x32x32 = 3072 elements (kept by the loop, read by conv1); the
  // 16x32x32 = 16384-element tensors that backward keeps: conv1's output (bn1's input), bn1's output
  // (relu1 works in place and keeps its result, conv2 reads it), conv2's output (bn2's input), the
  // add's output (relu2 in place; branch_a and branch_b read it) and the concat (maxpool's input);
  // dropout's 16-element output (fc's input). Not tensors of a layer: maxpool's int64 indices
  // (16x16x16 x 8 bytes), dropout's mask (16 bytes), the log-softmax (10 x 4 bytes).
  const double per_sample = (3072 + 5 * 16384 + 16) * 4.0 + 4096 * 8 + 16 + 40;
  const double bn_stats = 2 * (2 * 16 * 4.0);  // save_mean and save_invstd of two batchnorms
  Graph g = tiny();
  CHECK(saved_activation_bytes(g, 1, Precision::FP32) == per_sample + bn_stats);
  CHECK(saved_activation_bytes(g, 2, Precision::FP32) == 2 * per_sample + bn_stats);
}

TEST_CASE("memory: the whole budget of the tiny model, counted by hand") {
  Graph g = tiny();
  REQUIRE(g.params() == 4266);
  GpuSpec gpu;
  gpu.memory_bytes = 2e6;
  const int64_t n = 2;
  MemoryFit m = memory_fit(g, n, Precision::FP32, 1, gpu, bare());
  CHECK(m.weights_bytes == 4266 * 4);
  CHECK(m.gradients_bytes == 4266 * 4);
  CHECK(m.optimizer_bytes == 4266 * 4);
  CHECK(m.weight_copies_bytes == 0);
  // The loop's batch: 3x32x32 FP32 samples and int64 labels; the activations exclude it.
  const double input = n * (3072 * 4.0 + 8);
  CHECK(m.input_bytes == input);
  const double activations = saved_activation_bytes(g, n, Precision::FP32) - n * 3072 * 4.0;
  CHECK(m.activations_bytes == activations);
  CHECK(m.buckets_bytes == 0);  // bare(): no DDP buckets on one GPU
  CHECK(m.nccl_bytes == 0);
  // Optimizer step: weights, momentum, gradients and the input.
  CHECK(m.step_peak_bytes == 3 * 4266 * 4 + input);
  // Backward: at least everything saved at the end of the forward pass, at most that plus all the
  // gradients, the largest gradient flow (conv2: 16384 in and out per sample) and conv2's workspace.
  const double held = 2 * 4266 * 4 + input;
  CHECK(m.backward_peak_bytes >= held + activations);
  CHECK(m.backward_peak_bytes <= held + activations + 4266 * 4 + 2 * 16384 * n * 4 + m.workspace_bytes);
  CHECK(m.workspace_bytes <= (16384 + 16384) * n * 4 + 2304 * 4);
  CHECK(m.allocated_peak_bytes == std::max(m.backward_peak_bytes, m.step_peak_bytes));
  CHECK(m.device_bytes == m.allocated_peak_bytes);
  CHECK(m.fits == (m.device_bytes <= 2e6));

  // DDP builds its buckets at world size 1 too when the spec says so (PyTorch does).
  MemorySpec ddp1 = bare();
  ddp1.ddp_buckets_on_one_gpu = true;
  ddp1.optimizer_step_temp_bytes_per_param = 4;
  MemoryFit one = memory_fit(g, n, Precision::FP32, 1, gpu, ddp1);
  CHECK(one.buckets_bytes == 4266 * 4);
  CHECK(one.nccl_bytes == 0);
  CHECK(one.step_peak_bytes == 5 * 4266 * 4 + input);
  // Four input batches held (as validation/pytorch/ddp_reference.py does) add three more.
  MemoryFit four = memory_fit(g, n, Precision::FP32, 1, gpu, bare(), 4);
  CHECK(four.input_bytes == 4 * input);
  CHECK(four.allocated_peak_bytes == m.allocated_peak_bytes + 3 * input);

  // Two GPUs add DDP's copy of the gradients and NCCL's buffers.
  MemoryFit two = memory_fit(g, n, Precision::FP32, 2, gpu, bare());
  CHECK(two.buckets_bytes == 4266 * 4);
  CHECK(two.nccl_bytes == 1000);
  CHECK(two.device_bytes == m.device_bytes + 4266 * 4 + 1000);
  CHECK(two.allocated_peak_bytes == m.allocated_peak_bytes + 4266 * 4);

  // A GPU too small: it says so.
  gpu.memory_bytes = m.device_bytes - 1;
  MemoryFit small = memory_fit(g, n, Precision::FP32, 1, gpu, bare());
  CHECK_FALSE(small.fits);
  CHECK(memory_summary(small).find("does NOT fit") != std::string::npos);
}

TEST_CASE("memory: autocast halves the activations and keeps 16-bit weight copies") {
  Graph g = tiny();
  GpuSpec gpu;
  gpu.memory_bytes = 80e9;
  MemoryFit f32 = memory_fit(g, 64, Precision::FP32, 1, gpu, bare());
  MemoryFit b16 = memory_fit(g, 64, Precision::BF16, 1, gpu, bare());
  // Conv and linear weights: 432 + 2304 + 136 + 1160 + 170.
  CHECK(b16.weight_copies_bytes == (432 + 2304 + 136 + 1160 + 170) * 2);
  CHECK(b16.activations_bytes < 0.6 * f32.activations_bytes);
  CHECK(b16.activations_bytes > 0.4 * f32.activations_bytes);
}

TEST_CASE("memory: big batches stop fitting, and the shipped numbers are read") {
  const MemorySpec& spec = default_memory_spec();
  CHECK(spec.optimizer_state_bytes_per_param == 4);
  CHECK(spec.cuda_context_bytes > 0);
  ClusterSpec c = load_cluster("h100-sxm");
  Graph g = load_model("vgg16");
  MemoryFit ok = memory_fit(g, 32, Precision::FP32, 8, c.gpu);
  MemoryFit too_big = memory_fit(g, 2048, Precision::FP32, 8, c.gpu);
  CHECK(ok.fits);
  CHECK_FALSE(too_big.fits);
  CHECK(too_big.largest_part == "activations");
  // Activations grow with the batch, the rest does not.
  MemoryFit twice = memory_fit(g, 64, Precision::FP32, 8, c.gpu);
  CHECK(twice.activations_bytes == Approx(2 * ok.activations_bytes).epsilon(0.01));
  CHECK(twice.weights_bytes == ok.weights_bytes);
}
