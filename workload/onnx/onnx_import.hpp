#pragma once
// ONNX import: reads a model exported with torch.onnx.export (or any ONNX producer), runs ONNX shape
// inference with the batch dimension set to the prediction's batch (evaluating the shapes the graph
// computes, such as x.view(x.size(0), ...)'s), and maps its operators to dtsim layers
// (docs/onnx-import.md lists them). Only the graph and the initializers' dimensions are read:
// weights may be stored outside the file, or not at all.
//
// libonnx and protobuf stay inside workload/onnx/ (the importer in parts, onnx_importer.hpp, and the
// constant evaluation it uses, onnx_fold.*): this header is all that other code sees.
#include <string>
#include <vector>

#include "workload/graph.hpp"
#include "workload/model_json.hpp"

namespace dtsim {

// Reads `path` into a shape-checked dtsim graph with a softmax cross-entropy loss on its first
// output. Bad input (not ONNX, shapes ONNX cannot infer, an operator dtsim cannot cost unless
// options.allow_unknown_ops) throws InputError naming the file, the node and the rule. What the
// importer assumed (an eval-mode export, operators costed by roofline) is in Graph::notes.
Graph import_onnx(const std::string& path, const ModelLoadOptions& options);

// The ONNX operators dtsim maps to its own layers, sorted (for messages and documentation).
const std::vector<std::string>& onnx_supported_ops();

}  // namespace dtsim
