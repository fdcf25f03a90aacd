#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "train_kernels.hpp"

namespace dh {

namespace {

constexpr int kT = 256;

unsigned blocks_for(size_t n) {
  size_t b = (n + kT - 1) / kT;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(b, 132 * 32)));
}

__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

__device__ __forceinline__ float ld(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __nv_bfloat16* p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void st(float* p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16* p, size_t i, float v) { p[i] = __float2bfloat16(v); }

#define GRID_LOOP(i, n) \
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

__global__ void k_f2b(const float* in, __nv_bfloat16* out, size_t n) {
  GRID_LOOP(i, n) out[i] = __float2bfloat16(in[i]);
}
__global__ void k_b2f(const __nv_bfloat16* in, float* out, size_t n) {
  GRID_LOOP(i, n) out[i] = __bfloat162float(in[i]);
}

// Bias add and bias gradient run at memory speed, as PyTorch's (output.add_(bias) and
// grad_output.sum({0, 2, 3}) through TensorIterator: 32-bit index math, vectorised loads). The first
// version divided a 64-bit flat index per element and gave each channel one block, which ran a bf16
// bias add on vgg16's first layers at a third of the bandwidth and its bias gradient at a tenth; the
// second (scalar loads) still reached only 0.6-1.4 TB/s. Blocks now work on (image, channel) planes,
// four elements per load where a plane's length allows; linear layers (HW = 1) sum columns.

// Four consecutive elements as float, one 16-byte (fp32) or 8-byte (bf16) access.
__device__ __forceinline__ float4 ld4(const float* p, unsigned j) { return reinterpret_cast<const float4*>(p)[j]; }
__device__ __forceinline__ float4 ld4(const __nv_bfloat16* p, unsigned j) {
  uint2 raw = reinterpret_cast<const uint2*>(p)[j];
  float2 a = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&raw.x));
  float2 b = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&raw.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void st4(float* p, unsigned j, float4 v) { reinterpret_cast<float4*>(p)[j] = v; }
__device__ __forceinline__ void st4(__nv_bfloat16* p, unsigned j, float4 v) {
  __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
  uint2 raw;
  raw.x = *reinterpret_cast<unsigned*>(&a);
  raw.y = *reinterpret_cast<unsigned*>(&b);
  reinterpret_cast<uint2*>(p)[j] = raw;
}

// Flat version for small planes (linear layers: HW = 1).
template <typename T>
__global__ void k_bias_add_flat(T* y, const float* b, unsigned C, unsigned HW, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) st(y, i, ld(y, i) + b[(i / HW) % C]);
}

// Block `blk` adds to part blk % parts of plane blk / parts; VEC: HW % 4 == 0, four per access.
template <typename T, bool VEC>
__global__ void k_bias_add_planes(T* y, const float* b, unsigned C, unsigned HW, unsigned parts) {
  const unsigned plane = blockIdx.x / parts, part = blockIdx.x % parts;
  const float bias = b[plane % C];
  T* p = y + size_t(plane) * HW;
  if (VEC) {
    for (unsigned j = part * blockDim.x + threadIdx.x; j < HW / 4; j += parts * blockDim.x) {
      float4 v = ld4(p, j);
      v.x += bias, v.y += bias, v.z += bias, v.w += bias;
      st4(p, j, v);
    }
  } else {
    for (unsigned i = part * blockDim.x + threadIdx.x; i < HW; i += parts * blockDim.x) st(p, i, ld(p, i) + bias);
  }
}

__device__ float g_bias_partials[1 << 16];

__device__ __forceinline__ float block_sum(float acc) {
  __shared__ float sh[32];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = acc;
  __syncthreads();
  float v = 0;
  if (threadIdx.x < 32) {
    v = threadIdx.x < (blockDim.x >> 5) ? sh[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  }
  return v;  // valid in thread 0
}

// db[c] = sum over n, h, w of dy[n][c][h][w]. Channel c = blockIdx.x; its N x parts units (a part of
// one image's plane each) are shared among gridDim.y blocks, whose partial sums k_bias_grad_finish
// adds in a fixed order (deterministic). VEC: HW % 4 == 0.
template <typename T, bool VEC>
__global__ void k_bias_grad(const T* dy, float* db, unsigned N, unsigned C, unsigned HW, unsigned parts) {
  const unsigned c = blockIdx.x, slices = gridDim.y;
  const unsigned len = VEC ? HW / 4 : HW, chunk = (len + parts - 1) / parts;
  float acc = 0;
  for (unsigned u = blockIdx.y; u < N * parts; u += slices) {
    const unsigned n = u / parts, part = u % parts;
    const T* p = dy + (size_t(n) * C + c) * HW;
    const unsigned end = min(len, (part + 1) * chunk);
    for (unsigned j = part * chunk + threadIdx.x; j < end; j += blockDim.x) {
      if (VEC) {
        float4 v = ld4(p, j);
        acc += (v.x + v.y) + (v.z + v.w);
      } else {
        acc += ld(p, j);
      }
    }
  }
  float v = block_sum(acc);
  if (threadIdx.x == 0) {
    if (slices == 1)
      db[c] = v;
    else
      g_bias_partials[size_t(c) * slices + blockIdx.y] = v;
  }
}

// Small planes (linear layers, HW = 1): one thread per channel, neighbouring threads read
// neighbouring channels.
template <typename T>
__global__ void k_bias_grad_columns(const T* dy, float* db, unsigned N, unsigned C, unsigned HW) {
  const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float acc = 0;
  for (unsigned n = 0; n < N; ++n) {
    const T* p = dy + (size_t(n) * C + c) * HW;
    for (unsigned i = 0; i < HW; ++i) acc += ld(p, i);
  }
  db[c] = acc;
}

__global__ void k_bias_grad_finish(float* db, int C, int slices) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float v = 0;
  for (int s = 0; s < slices; ++s) v += g_bias_partials[size_t(c) * slices + s];
  db[c] = v;
}

template <typename T>
__global__ void k_dropout(const T* in, T* out, size_t n, float p, uint64_t seed) {
  float scale = 1.f / (1.f - p);
  uint32_t thr = static_cast<uint32_t>(p * 4294967296.0);
  GRID_LOOP(i, n) {
    bool keep = static_cast<uint32_t>(mix(seed ^ (i * 0x9E3779B97F4A7C15ULL))) >= thr;
    st(out, i, keep ? ld(in, i) * scale : 0.f);
  }
}

template <typename T>
__global__ void k_concat(T* small, T* big, int Cs, int Cd, int off, long long HW, size_t n, bool to_big, bool acc) {
  GRID_LOOP(i, n) {  // i indexes the small tensor
    size_t per = size_t(Cs) * HW;
    size_t nn = i / per, r = i % per;
    size_t j = nn * size_t(Cd) * HW + size_t(off) * HW + r;
    if (to_big)
      st(big, j, acc ? ld(big, j) + ld(small, i) : ld(small, i));
    else
      st(small, i, acc ? ld(small, i) + ld(big, j) : ld(big, j));
  }
}

template <typename T>
__global__ void k_batch(T* x, const int* labels, int N, long long per, uint64_t seed, float amp) {
  size_t n = size_t(N) * per;
  GRID_LOOP(i, n) {
    size_t s = i / per, j = i % per;
    int lab = labels[s];
    float u = (mix(seed * 0x9E3779B97F4A7C15ULL + i) >> 40) * (2.0f / 16777216.0f) - 1.f;
    float sign = (mix((uint64_t(lab) << 32) ^ (j * 0xD1B54A32D192ED03ULL) ^ 0x5bd1e995ULL) & 1) ? 1.f : -1.f;
    st(x, i, u + amp * sign);
  }
}
__global__ void k_labels(int* labels, int N, int classes, uint64_t seed) {
  GRID_LOOP(i, size_t(N)) labels[i] = static_cast<int>(mix(seed * 0x2545F4914F6CDD1DULL + i + 1) % classes);
}

__global__ void k_hash(const float* p, size_t n, unsigned long long* out) {
  unsigned long long h = 0;
  GRID_LOOP(i, n) h ^= mix((uint64_t(i) << 32) ^ __float_as_uint(p[i]) ^ 0x1234567ULL);
  for (int o = 16; o > 0; o >>= 1) h ^= __shfl_xor_sync(0xffffffff, h, o);
  if ((threadIdx.x & 31) == 0 && h) atomicXor(out, h);
}

}  // namespace

void cast_f32_to_bf16(cudaStream_t s, const float* in, void* out, size_t n) {
  if (!n) return;
  k_f2b<<<blocks_for(n), kT, 0, s>>>(in, static_cast<__nv_bfloat16*>(out), n);
  DH_LAUNCH();
}
void cast_bf16_to_f32(cudaStream_t s, const void* in, float* out, size_t n) {
  if (!n) return;
  k_b2f<<<blocks_for(n), kT, 0, s>>>(static_cast<const __nv_bfloat16*>(in), out, n);
  DH_LAUNCH();
}

void bias_add(cudaStream_t s, DType t, void* y, const float* b, int N, int C, long long HW) {
  const size_t n = size_t(N) * C * HW;
  if (!n) return;
  if (HW >= 64) {
    const bool vec = HW % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const long long per_block = (vec ? 4 : 1) * 4LL * kT;  // about four accesses per thread
    const unsigned parts = static_cast<unsigned>(std::min<long long>(64, (HW + per_block - 1) / per_block));
    const unsigned blocks = static_cast<unsigned>(size_t(N) * C * parts);
    const unsigned hw = static_cast<unsigned>(HW);
    if (t == DType::F32) {
      float* p = static_cast<float*>(y);
      vec ? k_bias_add_planes<float, true><<<blocks, kT, 0, s>>>(p, b, C, hw, parts)
          : k_bias_add_planes<float, false><<<blocks, kT, 0, s>>>(p, b, C, hw, parts);
    } else {
      __nv_bfloat16* p = static_cast<__nv_bfloat16*>(y);
      vec ? k_bias_add_planes<__nv_bfloat16, true><<<blocks, kT, 0, s>>>(p, b, C, hw, parts)
          : k_bias_add_planes<__nv_bfloat16, false><<<blocks, kT, 0, s>>>(p, b, C, hw, parts);
    }
  } else if (t == DType::F32) {
    k_bias_add_flat<float><<<blocks_for(n), kT, 0, s>>>(static_cast<float*>(y), b, C, unsigned(HW), unsigned(n));
  } else {
    k_bias_add_flat<__nv_bfloat16><<<blocks_for(n), kT, 0, s>>>(static_cast<__nv_bfloat16*>(y), b, C, unsigned(HW), unsigned(n));
  }
  DH_LAUNCH();
}
void bias_grad(cudaStream_t s, DType t, const void* dy, float* db, int N, int C, long long HW) {
  const unsigned hw = static_cast<unsigned>(HW);
  if (HW < 64) {
    if (t == DType::F32)
      k_bias_grad_columns<float><<<(C + 127) / 128, 128, 0, s>>>(static_cast<const float*>(dy), db, N, C, hw);
    else
      k_bias_grad_columns<__nv_bfloat16><<<(C + 127) / 128, 128, 0, s>>>(static_cast<const __nv_bfloat16*>(dy), db, N, C, hw);
    DH_LAUNCH();
    return;
  }
  const bool vec = HW % 4 == 0 && reinterpret_cast<uintptr_t>(dy) % 16 == 0;
  const int th = 256;
  // Units of about 8 K elements (a plane split into `parts`); at most 64 blocks per channel and 64 K
  // partial sums in all.
  const unsigned parts = static_cast<unsigned>(std::max<long long>(1, std::min<long long>(64, HW / 8192)));
  const size_t units = size_t(N) * parts;
  const size_t cap = std::max<size_t>(1, (size_t(1) << 16) / std::max(C, 1));
  const unsigned slices = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>({64, units, cap})));
  const dim3 grid(C, slices);
  if (t == DType::F32) {
    const float* p = static_cast<const float*>(dy);
    vec ? k_bias_grad<float, true><<<grid, th, 0, s>>>(p, db, N, C, hw, parts)
        : k_bias_grad<float, false><<<grid, th, 0, s>>>(p, db, N, C, hw, parts);
  } else {
    const __nv_bfloat16* p = static_cast<const __nv_bfloat16*>(dy);
    vec ? k_bias_grad<__nv_bfloat16, true><<<grid, th, 0, s>>>(p, db, N, C, hw, parts)
        : k_bias_grad<__nv_bfloat16, false><<<grid, th, 0, s>>>(p, db, N, C, hw, parts);
  }
  DH_LAUNCH();
  if (slices > 1) {
    k_bias_grad_finish<<<(C + 255) / 256, 256, 0, s>>>(db, C, slices);
    DH_LAUNCH();
  }
}
void dropout_apply(cudaStream_t s, DType t, const void* in, void* out, size_t n, float p, uint64_t seed) {
  if (t == DType::F32)
    k_dropout<float><<<blocks_for(n), kT, 0, s>>>(static_cast<const float*>(in), static_cast<float*>(out), n, p, seed);
  else
    k_dropout<__nv_bfloat16><<<blocks_for(n), kT, 0, s>>>(static_cast<const __nv_bfloat16*>(in),
                                                          static_cast<__nv_bfloat16*>(out), n, p, seed);
  DH_LAUNCH();
}
void concat_slice(cudaStream_t s, DType t, void* small, void* big, int N, int Cs, int Cd, int off, long long HW,
                  bool to_big, bool accumulate) {
  size_t n = size_t(N) * Cs * HW;
  if (t == DType::F32)
    k_concat<float><<<blocks_for(n), kT, 0, s>>>(static_cast<float*>(small), static_cast<float*>(big), Cs, Cd, off,
                                                 HW, n, to_big, accumulate);
  else
    k_concat<__nv_bfloat16><<<blocks_for(n), kT, 0, s>>>(static_cast<__nv_bfloat16*>(small),
                                                         static_cast<__nv_bfloat16*>(big), Cs, Cd, off, HW, n, to_big,
                                                         accumulate);
  DH_LAUNCH();
}
void make_batch(cudaStream_t s, DType t, void* x, int* labels, int N, long long per_sample, int classes, uint64_t seed,
                float amp) {
  k_labels<<<blocks_for(N), kT, 0, s>>>(labels, N, classes, seed);
  DH_LAUNCH();
  size_t n = size_t(N) * per_sample;
  if (t == DType::F32)
    k_batch<float><<<blocks_for(n), kT, 0, s>>>(static_cast<float*>(x), labels, N, per_sample, seed, amp);
  else
    k_batch<__nv_bfloat16><<<blocks_for(n), kT, 0, s>>>(static_cast<__nv_bfloat16*>(x), labels, N, per_sample, seed,
                                                        amp);
  DH_LAUNCH();
}
void hash_floats(cudaStream_t s, const float* p, size_t n, unsigned long long* out) {
  DH_CUDA(cudaMemsetAsync(out, 0, sizeof *out, s));
  k_hash<<<blocks_for(n), kT, 0, s>>>(p, n, out);
  DH_LAUNCH();
}

}  // namespace dh
