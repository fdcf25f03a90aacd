// Determinism: the same inputs give byte-identical outputs, run after run. dtsim starts no threads
// of its own (no OpenMP, no std::thread); the runs below also vary the thread-count variables that
// OpenMP, Eigen and BLAS read, so a library that did start threads would be caught.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "study_cli.hpp"

namespace fs = std::filesystem;

namespace {

using study_test::slurp;

// Runs dtsim with `env` set, writing its output with --out; returns the file's bytes.
std::string output_of(const std::string& env, const std::string& args, int run) {
  const std::string base = (fs::temp_directory_path() / ("dtsim_det_" + std::to_string(::getpid()) + "_" + std::to_string(run))).string();
  const std::string cmd = env + " " + DTSIM_BINARY + " " + args + " --out " + base + ".out 2>" + base + ".err </dev/null";
  const int status = std::system(cmd.c_str());
  INFO(args << ": " << slurp(base + ".err"));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::string out = slurp(base + ".out");
  fs::remove(base + ".out");
  fs::remove(base + ".err");
  return out;
}

}  // namespace

TEST_CASE("determinism: predict and sweep outputs are byte-identical across runs and thread counts") {
  const std::string sweep = std::string(DTSIM_SOURCE_DIR) + "/configs/sweeps/link-whatif.json";
  const std::string onnx = std::string(DTSIM_TEST_DATA) + "/onnx/resnet18.onnx";
  const std::vector<std::string> commands = {
      "predict --model resnet50 --cluster h100-sxm --gpus 64 --batch-per-gpu 64 --format json",
      "predict --model vgg16 --gpus 1000 --cluster-nodes 200 --batch-per-gpu 7 --precision bf16 --format csv",
      "predict --model densenet121 --gpus 16 --batch-per-gpu 32 --compute-model roofline --dataset-size 1281167 --epochs 90 --format json",
      "sweep --model resnet18,mobilenet_v2 --gpus 1..64:x2 --batch-per-gpu 8,64 --nic-Gbps 100,400 --format csv",
      "sweep --model inception_v3 --gpus 1..16:x4 --batch-per-gpu 16 --format json",
      "sweep --sweep " + sweep + " --format csv",
      "collective --op allreduce --bytes 0,1..1G:x4 --gpus 16 --format json",
  };
  const std::vector<std::string> envs = {"OMP_NUM_THREADS=1 EIGEN_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1",
                                         "OMP_NUM_THREADS=1 EIGEN_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1",
                                         "OMP_NUM_THREADS=8 EIGEN_NUM_THREADS=8 OPENBLAS_NUM_THREADS=8", "env -u OMP_NUM_THREADS"};
  int run = 0;
  for (const auto& args : commands) {
    INFO(args);
    const std::string first = output_of(envs[0], args, run++);
    REQUIRE(first.size() > 100);
    for (size_t e = 1; e < envs.size(); ++e) {
      INFO(envs[e]);
      CHECK(output_of(envs[e], args, run++) == first);
    }
  }
  if (fs::exists(onnx)) {
    const std::string args = "predict --model " + onnx + " --gpus 8 --batch-per-gpu 16 --format json";
    CHECK(output_of(envs[0], args, run++) == output_of(envs[2], args, run++));
  }
}
