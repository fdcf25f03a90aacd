// dtsim-harness: measures what dtsim predicts. Subcommands: kernels, collective, train, info.
// See validation/README.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "modes.hpp"
#include "provenance.hpp"
#include "util.hpp"

namespace dh {

int run_info(const Args& a) {
  int dev = static_cast<int>(a.integer("device", 0));
  DH_CUDA(cudaSetDevice(dev));
  auto j = collect_provenance(dev, a, "info");
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace dh

static void usage() {
  std::printf(
      "usage: dtsim-harness MODE [--option value ...]\n"
      "  kernels     --out DIR [--budget-s 300] [--math fp32,bf16] [--kinds all|conv2d,gemm,...]\n"
      "              [--batches 1,2,4,...] [--models-dir configs/models] [--random-frac 0.35] [--seed 1]\n"
      "              [--target-ms 10] [--min-repeats 5] [--max-repeats 30] [--workspace-mib 4096]\n"
      "              [--conv-passes fwd,bwd_data,bwd_filter] [--share kind=fraction,...] [--max-items N]\n"
      "              [--conv-api legacy|graph] [--conv-layout nchw|nhwc] [--graph-max-plans 10] [--arena-mib M] [--reserve-mib 2048]\n"
      "              [--no-sanity] [--device 0] [--git-commit SHA] [--verbose] [--list-shapes] [--back-to-back]\n"
      "  collective  --out DIR [--gpus 2[,4,8]] [--ops allreduce,reducescatter,allgather,broadcast]\n"
      "              [--min-bytes 4] [--max-bytes 1G] [--samples 10] [--warmup 5] [--target-ms 5]\n"
      "              [--timeout-s 60] [--total-timeout-s 1200] [--no-check] [--git-commit SHA]\n"
      "              [--comm blocking|nonblocking] [--file-suffix S]\n"
      "  train       --out DIR [--model resnet50[,vgg16,...|path.json]] [--batch 32[,64]] [--gpus 1]\n"
      "              [--math fp32[,bf16]] [--overlap on[,off] | --no-overlap] [--bucket-mib 25]\n"
      "              [--first-bucket-mib 1] [--iters 25] [--warmup 5] [--profile-iters 2] [--nbatches 4]\n"
      "              [--lr 0.01] [--momentum 0.9] [--weight-decay 1e-4] [--workspace-mib 4096]\n"
      "              [--graph-max-plans 10] [--timeout-s 120] [--total-timeout-s 1800] [--seed 1]\n"
      "              [--no-broadcast-buffers] [--models-dir configs/models] [--git-commit SHA]\n"
      "              [--allreduce flat|hierarchical|hierarchical-leader --group-size G] [--average-every K]\n"
      "  info        [--device 0]   print the provenance record as JSON\n"
      "  selftest    train mode's bias add and bias gradient kernels against a CPU reference\n");
}

int main(int argc, char** argv) {
  // Never NVLink multicast (NVLS): it can take shared GPUs out of service. Set before anything starts.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  std::string mode = argv[1];
  try {
    dh::Args a(argc, argv, 2);
    if (mode == "kernels") return dh::run_kernels(a);
    if (mode == "collective") return dh::run_collective(a);
    if (mode == "train") return dh::run_train(a);
    if (mode == "info") return dh::run_info(a);
    if (mode == "selftest") return dh::run_selftest(a);
    std::fprintf(stderr, "dtsim-harness: unknown mode '%s'\n", mode.c_str());
    usage();
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim-harness %s: error: %s\n", mode.c_str(), e.what());
    return 1;
  }
}
