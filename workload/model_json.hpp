#pragma once
// Reading models: the documented JSON format (docs/model-format.md), the built-in zoo, and ONNX
// files (workload/onnx/onnx_import.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "core/config_paths.hpp"
#include "core/json_util.hpp"
#include "workload/graph.hpp"

namespace dtsim {


// Parses and shape-checks a model document; `what` names it in errors. seq_len > 0: a language
// model's sequence length in place of the file's (InputError("--seq-len") for another model, or
// beyond its learned positions).
Graph parse_model(const Json& doc, const std::string& what, int64_t seq_len = 0);

// How to read a model. JSON models and zoo names ignore both fields.
struct ModelLoadOptions {
  // The batch size ONNX shape inference runs with: the per-GPU batch of the prediction. dtsim's graph
  // is per sample; the batch matters only to exports whose reshapes state it.
  int64_t batch = 1;
  // Cost ONNX operators dtsim does not know by roofline from their tensor sizes instead of stopping.
  bool allow_unknown_ops = false;
  // A language model's sequence length (--seq-len); 0: the model file's. JSON and zoo models only.
  int64_t seq_len = 0;
};

// A zoo name (configs/models/NAME.json), a path to a .json file, or a path to a .onnx (or .onnx.gz) file.
Graph load_model(const std::string& name_or_path, const ModelLoadOptions& options = {});

// Whether load_model reads `name_or_path` as an ONNX file (whose graph depends on ModelLoadOptions).
bool is_onnx_path(const std::string& name_or_path);

// Names of the built-in models, sorted.
std::vector<std::string> zoo_models();

}  // namespace dtsim
