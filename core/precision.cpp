#include "core/precision.hpp"

#include "core/error.hpp"

namespace dtsim {

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "tf32") return Precision::TF32;
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  throw InputError("--precision", "unknown precision '" + s + "' (fp32, tf32, bf16, fp16)");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
  }
  return "?";
}

const char* math_name(MathMode m) {
  static const char* n[] = {"fp32", "tf32", "bf16", "fp16"};
  return n[static_cast<int>(m)];
}

}  // namespace dtsim
