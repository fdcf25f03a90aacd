// `dtsim-harness selftest`: the train mode's own kernels (bias add, bias gradient) against a CPU
// reference on shapes that exercise each launch path (one plane part or many, few or many slices,
// linear layers' HW = 1), in fp32 and bf16. Exit 0 when all agree, 1 otherwise.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "modes.hpp"
#include "train_kernels.hpp"

namespace dh {

namespace {

struct Case {
  int N, C;
  long long HW;
};

float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

bool check(DType t, const Case& k) {
  const size_t n = size_t(k.N) * k.C * k.HW;
  const size_t eb = t == DType::F32 ? 4 : 2;
  std::mt19937 rng(k.N * 131 + k.C * 7 + static_cast<unsigned>(k.HW));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> y(n), bias(k.C);
  for (auto& v : y) v = t == DType::F32 ? u(rng) : round_bf16(u(rng));
  for (auto& v : bias) v = u(rng);
  std::vector<unsigned char> host(n * eb);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) reinterpret_cast<float*>(host.data())[i] = y[i];
    else reinterpret_cast<__nv_bfloat16*>(host.data())[i] = __float2bfloat16(y[i]);
  }
  void* dy = nullptr;
  float *db = nullptr, *dbias = nullptr;
  DH_CUDA(cudaMalloc(&dy, n * eb));
  DH_CUDA(cudaMalloc(&db, k.C * sizeof(float)));
  DH_CUDA(cudaMalloc(&dbias, k.C * sizeof(float)));
  DH_CUDA(cudaMemcpy(dy, host.data(), n * eb, cudaMemcpyHostToDevice));
  DH_CUDA(cudaMemcpy(dbias, bias.data(), k.C * sizeof(float), cudaMemcpyHostToDevice));
  bias_grad(nullptr, t, dy, db, k.N, k.C, k.HW);
  bias_add(nullptr, t, dy, dbias, k.N, k.C, k.HW);
  std::vector<float> got_db(k.C);
  DH_CUDA(cudaMemcpy(got_db.data(), db, k.C * sizeof(float), cudaMemcpyDeviceToHost));
  DH_CUDA(cudaMemcpy(host.data(), dy, n * eb, cudaMemcpyDeviceToHost));
  DH_CUDA(cudaFree(dy));
  DH_CUDA(cudaFree(db));
  DH_CUDA(cudaFree(dbias));

  double worst_grad = 0, worst_add = 0;
  for (int c = 0; c < k.C; ++c) {
    double want = 0, mag = 0;
    for (int b = 0; b < k.N; ++b)
      for (long long i = 0; i < k.HW; ++i) {
        double v = y[(size_t(b) * k.C + c) * k.HW + i];
        want += v, mag += std::fabs(v);
      }
    worst_grad = std::max(worst_grad, std::fabs(got_db[c] - want) / (mag + 1));
  }
  for (size_t i = 0; i < n; ++i) {
    float want = y[i] + bias[(i / k.HW) % k.C];
    float got = t == DType::F32 ? reinterpret_cast<float*>(host.data())[i]
                                : __bfloat162float(reinterpret_cast<__nv_bfloat16*>(host.data())[i]);
    if (t != DType::F32) want = round_bf16(want);
    worst_add = std::max(worst_add, double(std::fabs(got - want)));
  }
  const bool ok = worst_grad < 1e-5 && worst_add < 1e-6;
  std::printf("%-4s N=%-4d C=%-5d HW=%-7lld bias_grad rel err %.2e  bias_add max err %.2e  %s\n", t == DType::F32 ? "fp32" : "bf16",
              k.N, k.C, k.HW, worst_grad, worst_add, ok ? "ok" : "FAIL");
  return ok;
}

}  // namespace

// Achieved bandwidth on vgg16-like planes (batch 32 of features.2's output, 64 x 224 x 224; and
// alexnet's 13 x 13 and its classifier's 4096 columns): the train mode is meant to run these at the
// memory speed PyTorch's kernels reach, so a slow one shows here rather than as a model error.
void bandwidth(DType t, int N, int C, long long HW) {
  const size_t n = size_t(N) * C * HW, eb = t == DType::F32 ? 4 : 2;
  void* y = nullptr;
  float *b = nullptr, *db = nullptr;
  DH_CUDA(cudaMalloc(&y, n * eb));
  DH_CUDA(cudaMalloc(&b, C * sizeof(float)));
  DH_CUDA(cudaMalloc(&db, C * sizeof(float)));
  DH_CUDA(cudaMemset(y, 0, n * eb));
  DH_CUDA(cudaMemset(b, 0, C * sizeof(float)));
  cudaEvent_t e0, e1, e2;
  DH_CUDA(cudaEventCreate(&e0));
  DH_CUDA(cudaEventCreate(&e1));
  DH_CUDA(cudaEventCreate(&e2));
  const int reps = 20;
  bias_add(nullptr, t, y, b, N, C, HW);
  bias_grad(nullptr, t, y, db, N, C, HW);
  DH_CUDA(cudaEventRecord(e0));
  for (int r = 0; r < reps; ++r) bias_add(nullptr, t, y, b, N, C, HW);
  DH_CUDA(cudaEventRecord(e1));
  for (int r = 0; r < reps; ++r) bias_grad(nullptr, t, y, db, N, C, HW);
  DH_CUDA(cudaEventRecord(e2));
  DH_CUDA(cudaEventSynchronize(e2));
  float add_ms = 0, grad_ms = 0;
  DH_CUDA(cudaEventElapsedTime(&add_ms, e0, e1));
  DH_CUDA(cudaEventElapsedTime(&grad_ms, e1, e2));
  add_ms /= reps, grad_ms /= reps;
  std::printf("%-4s N=%-4d C=%-5d HW=%-7lld bias_add %8.4f ms %6.2f TB/s   bias_grad %8.4f ms %6.2f TB/s\n", t == DType::F32 ? "fp32" : "bf16",
              N, C, HW, add_ms, 2.0 * n * eb / add_ms / 1e9, grad_ms, 1.0 * n * eb / grad_ms / 1e9);
  DH_CUDA(cudaFree(y));
  DH_CUDA(cudaFree(b));
  DH_CUDA(cudaFree(db));
}

int run_selftest(const Args&) {
  const Case cases[] = {{2, 3, 50176}, {4, 64, 12544}, {1, 16, 200000}, {3, 5, 3025}, {2, 9, 169}, {8, 512, 49}, {64, 4096, 1}, {3, 1000, 1}, {5, 7, 9}};
  bool ok = true;
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& k : cases) ok = check(t, k) && ok;
  for (DType t : {DType::F32, DType::BF16}) {
    bandwidth(t, 32, 64, 224 * 224);
    bandwidth(t, 64, 256, 13 * 13);
    bandwidth(t, 64, 4096, 1);
  }
  std::printf("selftest: %s\n", ok ? "all kernels agree with the CPU reference" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace dh
