// CUDA kernels that only the train mode needs: casts for bf16 autocast, bias add and bias
// gradient, dropout, concat slices, the synthetic dataset and a parameter hash. Launchers only;
// all enqueue on the given stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "util.hpp"

namespace dh {

void cast_f32_to_bf16(cudaStream_t s, const float* in, void* out, size_t n);
void cast_bf16_to_f32(cudaStream_t s, const void* in, float* out, size_t n);
// y[n, c, i] += b[c] for y of shape [N, C, HW] (conv: HW = H*W; linear: [B, out], HW = 1).
void bias_add(cudaStream_t s, DType t, void* y, const float* b, int N, int C, long long HW);
// db[c] = sum over n, i of dy[n, c, i] (fp32 result, written, not accumulated).
void bias_grad(cudaStream_t s, DType t, const void* dy, float* db, int N, int C, long long HW);
// out[i] = in[i] * keep(seed, i) / (1 - p): forward and backward are the same with the same seed.
void dropout_apply(cudaStream_t s, DType t, const void* in, void* out, size_t n, float p, uint64_t seed);
// Channel slice copy between a [N, Cs, HW] tensor and channels [off, off+Cs) of a [N, Cd, HW] one.
// to_big: small -> big (concat forward); else big -> small (concat backward); accumulate: += instead of =.
void concat_slice(cudaStream_t s, DType t, void* small, void* big, int N, int Cs, int Cd, int off, long long HW,
                  bool to_big, bool accumulate);
// Synthetic, learnable data: label = hash(seed, n) % classes; x[n, j] = U(-1, 1) + amp * sign(hash(label, j)).
void make_batch(cudaStream_t s, DType t, void* x, int* labels, int N, long long per_sample, int classes, uint64_t seed,
                float amp);
// Order-independent 64-bit hash of n floats' bit patterns (XOR of mixed (index, bits)) into *out (zeroed first).
void hash_floats(cudaStream_t s, const float* p, size_t n, unsigned long long* out);

}  // namespace dh
