// ONNX import (docs/onnx-import.md): the importer reads a file, so each input is written to a
// private temporary file first; then the graph is predicted once.
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "core/error.hpp"
#include "workload/model_json.hpp"
#include "workload/onnx/onnx_import.hpp"
#include "sim/predict.hpp"
#include "network/cluster.hpp"

using namespace dtsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ClusterSpec cluster = load_cluster("h100-sxm");
  static const std::string path = "/tmp/dtsim_fuzz_onnx_" + std::to_string(::getpid()) + ".onnx";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    ModelLoadOptions opt;
    opt.batch = 1 + static_cast<int64_t>(size % 64);
    opt.allow_unknown_ops = size % 2;
    Graph g = import_onnx(path, opt);
    TrainingConfig cfg;
    cfg.gpus = 8;
    cfg.batch_per_gpu = opt.batch;
    cfg.compute_model = "roofline";
    predict(g, cluster, cfg);
  } catch (const InputError&) {
  }
  return 0;
}
