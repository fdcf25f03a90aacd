#pragma once
// Precisions as users name them, and the arithmetic (math modes) GPU kernels run in.
#include <string>

namespace dtsim {

// Training precision as the user names it. kFP32 is PyTorch's default: TF32 convolutions (cuDNN
// allow_tf32 is on) and strict FP32 matmuls. BF16 and FP16 are autocast: convolutions and matmuls in
// 16 bits, parameters, gradients and the optimizer in FP32.
enum class Precision { FP32, TF32, BF16, FP16 };
Precision parse_precision(const std::string& s);  // throws InputError("--precision", ...)
const char* precision_name(Precision p);

// The arithmetic a kernel runs in; indexes GpuSpec::peak_flops.
enum class MathMode { FP32 = 0, TF32 = 1, BF16 = 2, FP16 = 3 };
constexpr int kMathModes = 4;
const char* math_name(MathMode m);

}  // namespace dtsim
