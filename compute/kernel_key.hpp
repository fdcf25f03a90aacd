#pragma once
// A kernel's class as measurements see it: kind / pass / dataset math mode [/ variant]. The measured
// predictors (compute/impl/mlp/) keep one predictor per key, and framework profiles key their
// per-kernel host costs on it (sim/schedule.cpp framework_kernel_key), so it lives above both.
#include <string>

#include "workload/kernels.hpp"

namespace dtsim {

// "fp32" (PyTorch's default math: TF32 convolutions, strict FP32 matmuls and FP32 vector kernels)
// or "bf16" (BF16 and FP16: the same kernels on the same bytes, measured) — the math modes the harness
// measures; "" when a kernel runs in a mode without data (TF32 matmuls, strict FP32 convolutions).
std::string dataset_math(const KernelDesc& k);

// "conv2d/fwd/fp32", "pool/bwd/bf16/max", "conv2d/fwd/bf16/nhwc" (channels_last convolutions); ""
// when no dataset can cover the kernel.
std::string predictor_key(const KernelDesc& k);

}  // namespace dtsim
