#pragma once
// Constant evaluation for the ONNX importer (onnx_importer.hpp and its parts include this): the
// values of the small tensors a model computes its shapes from. torch.onnx.export writes
// x.view(x.size(0), groups, -1, h, w) as Shape -> Gather -> Unsqueeze -> Concat -> Reshape, with Div,
// Mul, Cast, Slice on the way; nn.Upsample's sizes and expand_as's shape come the same way. The
// importer evaluates each such node once the values (or, for Shape and Size, the shapes) of its inputs
// are known, so that Reshape, Expand, Resize, Slice and Tile read their shape inputs as constants.
// The operators and rules are listed in docs/onnx-import.md ("Shapes computed in the graph").
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::onnx_fold {

// The most elements a tensor may have for its value to be read or computed: shapes, axes, scales and
// bounds are small; bigger tensors are weights or activations.
constexpr int64_t kMaxElements = 4096;

// A tensor whose value is known at import time.
struct Known {
  std::vector<int64_t> dims;   // {} for a scalar
  std::vector<double> values;  // row-major; integers are exact up to 2^53, far beyond any shape
  int32_t type = 0;            // onnx::TensorProto::DataType: FLOAT, DOUBLE, BOOL or a signed integer type
};

// The value an initializer or a Constant's tensor holds, if stored in the file with at most kMaxElements
// elements of a type listed in Known::type.
std::optional<Known> read_tensor(const onnx::TensorProto& t);
// `k` as an initializer named `name` (for ONNX shape inference, which reads shape inputs from initializers).
onnx::TensorProto write_tensor(const Known& k, const std::string& name);

// What evaluating a node needs from the importer.
struct Lookup {
  std::function<const Known*(const std::string&)> value;                 // a tensor's value, if known
  std::function<const std::vector<int64_t>*(const std::string&)> shape;  // a tensor's complete shape, if known
  int64_t opset = 0;
};

// The outputs' values of node `n` (a node of the default domain with one output), or none with
// `why_not` saying why: "" while an input's value (or, for Shape and Size, its shape) is not known
// yet, else the reason it cannot be evaluated ("divides by zero", "is not evaluated at import time").
struct Result {
  std::vector<Known> outputs;
  std::string why_not;
};
Result evaluate(const onnx::NodeProto& n, const Lookup& lookup);

// Whether evaluate() knows the operator at all, and the sorted list of those it knows (for messages
// and documentation).
bool evaluates(const std::string& op);
const std::vector<std::string>& evaluated_ops();

}  // namespace dtsim::onnx_fold
