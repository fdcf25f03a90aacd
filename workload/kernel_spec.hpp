#pragma once
// One kernel described by hand (`dtsim kernel`): its kind and pass by name, the training precision,
// its shape as NAME=VALUE fields with PyTorch's defaults where it has them, and a variant.
#include <string>
#include <vector>

#include "workload/kernels.hpp"

namespace dtsim {

struct KernelSpec {
  std::string kind;     // kind_name(), one of spec_kinds()
  std::string pass;     // pass_name(), a pass the kind has
  std::string dtype;    // the training precision (parse_precision), which decides the math mode
  std::string shape;    // comma-separated NAME=VALUE, NAME from kernel_shape_fields() or a default's name
  std::string variant;  // activation: relu (default), relu6, ...; pool: max (default) or avg; eltwise: any name;
                        // conv2d: native_depthwise (PyTorch's own depthwise kernels) or nothing (cuDNN)
  // PyTorch's name of the tensors' memory format (parse_memory_format): contiguous or channels_last.
  // Only conv2d may be channels_last: it alone has NHWC measurements (predictor key .../nhwc).
  std::string memory_format = "contiguous";
};

// The kinds a spec may name: every kernel kind but concat and dropout.
const std::vector<KernelKind>& spec_kinds();

// The kernel, costed (set_cost). Errors are InputErrors naming the flag of `dtsim kernel` to fix:
// --kind, --pass, --precision, --shape, --variant or --memory-format.
KernelDesc parse_kernel_spec(const KernelSpec& spec);

}  // namespace dtsim
