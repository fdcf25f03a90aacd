#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "device_kernels.hpp"
#include "util.hpp"

namespace dh {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(size_t work_items) {
  size_t b = (work_items + kThreads - 1) / kThreads;
  // Grid-stride loops: enough blocks to fill 132 SMs many times over, no more.
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(b, 132 * 32)));
}

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  unsigned long long t = t0;
  while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}

template <typename T>
__global__ void fill_kernel(T* p, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t h = mix64(seed * 0x9E3779B97F4A7C15ULL + i);
    float u = (h >> 40) * (1.0f / 16777216.0f);
    p[i] = static_cast<T>(lo + (hi - lo) * u);
  }
}

// ---- elementwise, vectorised by 16-byte packs (as PyTorch's vectorised elementwise kernels)
template <typename T>
struct Pack;
template <>
struct Pack<float> {
  static constexpr int N = 4;
};
template <>
struct Pack<__nv_bfloat16> {
  static constexpr int N = 8;
};

template <typename T>
__device__ __forceinline__ float tof(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float tof<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T fromf(float v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// Op: out[i] = f(a[i], b[i]); b may be unused. All pointers are 256-byte aligned by the arena.
template <typename T, typename F>
__global__ void binary_kernel(const T* a, const T* b, T* out, size_t n, F f) {
  constexpr int V = Pack<T>::N;
  size_t packs = n / V;
  size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
  const uint4* a4 = reinterpret_cast<const uint4*>(a);
  const uint4* b4 = reinterpret_cast<const uint4*>(b);
  uint4* o4 = reinterpret_cast<uint4*>(out);
  for (size_t i = tid; i < packs; i += stride) {
    uint4 va = a4[i];
    uint4 vb = b ? b4[i] : va;
    uint4 vo;
    const T* ta = reinterpret_cast<const T*>(&va);
    const T* tb = reinterpret_cast<const T*>(&vb);
    T* to = reinterpret_cast<T*>(&vo);
#pragma unroll
    for (int k = 0; k < V; ++k) to[k] = fromf<T>(f(tof(ta[k]), tof(tb[k])));
    o4[i] = vo;
  }
  for (size_t i = packs * V + tid; i < n; i += stride) out[i] = fromf<T>(f(tof(a[i]), b ? tof(b[i]) : 0.f));
}

struct ReluF {
  float cap;
  __device__ float operator()(float x, float) const { return fminf(fmaxf(x, 0.f), cap); }
};
struct ReluBwdF {  // a = y, b = dy
  float cap;
  __device__ float operator()(float y, float dy) const { return (y > 0.f && y < cap) ? dy : 0.f; }
};
struct AddF {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename F>
void launch_binary(cudaStream_t s, DType t, const void* a, const void* b, void* out, size_t n, F f) {
  unsigned g = grid_for(n / (t == DType::F32 ? 4 : 8) + 1);
  if (t == DType::F32)
    binary_kernel<float, F><<<g, kThreads, 0, s>>>(static_cast<const float*>(a), static_cast<const float*>(b),
                                                   static_cast<float*>(out), n, f);
  else
    binary_kernel<__nv_bfloat16, F><<<g, kThreads, 0, s>>>(
        static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b),
        static_cast<__nv_bfloat16*>(out), n, f);
  DH_LAUNCH();
}

// ---- softmax cross-entropy: one block per row
__device__ float block_reduce(float v, bool is_max) {
  __shared__ float sh[32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffff, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[wid] = v;
  __syncthreads();
  int nw = blockDim.x >> 5;
  v = threadIdx.x < nw ? sh[threadIdx.x] : (is_max ? -INFINITY : 0.f);
  if (wid == 0)
    for (int o = 16; o > 0; o >>= 1) {
      float w = __shfl_xor_sync(0xffffffff, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
  __syncthreads();
  if (threadIdx.x == 0) sh[0] = v;
  __syncthreads();
  return sh[0];
}

__global__ void log_softmax_kernel(const float* x, float* logp, int classes) {
  const float* xr = x + (size_t)blockIdx.x * classes;
  float* lr = logp + (size_t)blockIdx.x * classes;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = block_reduce(m, true);
  float s = 0;
  for (int j = threadIdx.x; j < classes; j += blockDim.x) s += __expf(xr[j] - m);
  s = block_reduce(s, false);
  float lse = m + __logf(s);
  for (int j = threadIdx.x; j < classes; j += blockDim.x) lr[j] = xr[j] - lse;
}

__global__ void nll_kernel(const float* logp, const int* labels, float* loss, int rows, int classes) {
  float v = 0;
  for (int i = threadIdx.x; i < rows; i += blockDim.x) v -= logp[(size_t)i * classes + labels[i]];
  v = block_reduce(v, false);
  if (threadIdx.x == 0) *loss = v / rows;
}

__global__ void ce_bwd_kernel(const float* logp, const int* labels, float* dx, int classes, float inv_rows) {
  size_t r = blockIdx.x;
  int lab = labels[r];
  for (int j = threadIdx.x; j < classes; j += blockDim.x)
    dx[r * classes + j] = (__expf(logp[r * classes + j]) - (j == lab ? 1.f : 0.f)) * inv_rows;
}

__global__ void labels_kernel(int* labels, int rows, int classes, uint64_t seed) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < rows; i += gridDim.x * blockDim.x)
    labels[i] = static_cast<int>(mix64(seed + i) % classes);
}

__global__ void sgd_kernel(float4* p, const float4* g, float4* v, size_t n4, float lr, float mu, float wd) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 pp = p[i], gg = g[i], vv = v[i];
    vv.x = mu * vv.x + gg.x + wd * pp.x;
    vv.y = mu * vv.y + gg.y + wd * pp.y;
    vv.z = mu * vv.z + gg.z + wd * pp.z;
    vv.w = mu * vv.w + gg.w + wd * pp.w;
    pp.x -= lr * vv.x;
    pp.y -= lr * vv.y;
    pp.z -= lr * vv.z;
    pp.w -= lr * vv.w;
    v[i] = vv;
    p[i] = pp;
  }
}
__global__ void sgd_tail_kernel(float* p, const float* g, float* v, size_t from, size_t n, float lr, float mu,
                                float wd) {
  size_t i = from + threadIdx.x;
  if (i < n) {
    v[i] = mu * v[i] + g[i] + wd * p[i];
    p[i] -= lr * v[i];
  }
}

__device__ __forceinline__ float coll_value(int rank, size_t i) { return float(rank + 1) + float(i % 13); }

__global__ void coll_fill_kernel(float* x, size_t n, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = coll_value(rank, i);
}

__global__ void coll_check_kernel(const float* y, size_t n, int kind, int rank, int nranks, size_t npr, int root,
                                  unsigned long long* bad) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float want = 0;
    if (kind == 0) {
      for (int r = 0; r < nranks; ++r) want += coll_value(r, i);
    } else if (kind == 1) {
      for (int r = 0; r < nranks; ++r) want += coll_value(r, (size_t)rank * npr + i);
    } else if (kind == 2) {
      want = coll_value(static_cast<int>(i / npr), i % npr);
    } else {
      want = coll_value(root, i);
    }
    if (y[i] != want) ++local;
  }
  if (local) atomicAdd(bad, local);
}

}  // namespace

void launch_spin(cudaStream_t s, double seconds) {
  spin_kernel<<<1, 1, 0, s>>>(static_cast<unsigned long long>(seconds * 1e9));
  DH_LAUNCH();
}

void fill_uniform(cudaStream_t s, void* p, size_t n, DType t, uint64_t seed, float lo, float hi) {
  if (n == 0) return;
  if (t == DType::F32)
    fill_kernel<float><<<grid_for(n), kThreads, 0, s>>>(static_cast<float*>(p), n, seed, lo, hi);
  else
    fill_kernel<__nv_bfloat16><<<grid_for(n), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed, lo, hi);
  DH_LAUNCH();
}

void relu_fwd(cudaStream_t s, DType t, const void* x, void* y, size_t n, bool relu6) {
  launch_binary(s, t, x, nullptr, y, n, ReluF{relu6 ? 6.f : INFINITY});
}
void relu_bwd(cudaStream_t s, DType t, const void* y, const void* dy, void* dx, size_t n, bool relu6) {
  launch_binary(s, t, y, dy, dx, n, ReluBwdF{relu6 ? 6.f : INFINITY});
}
void add_fwd(cudaStream_t s, DType t, const void* a, const void* b, void* c, size_t n) {
  launch_binary(s, t, a, b, c, n, AddF{});
}
void add_acc(cudaStream_t s, DType t, void* a, const void* b, size_t n) {
  launch_binary(s, t, a, b, a, n, AddF{});
}

void softmax_ce_fwd(cudaStream_t s, const float* x, float* logp, const int* labels, float* loss, int rows,
                    int classes) {
  int th = classes >= 1024 ? 1024 : (classes >= 256 ? 256 : 128);
  log_softmax_kernel<<<rows, th, 0, s>>>(x, logp, classes);
  DH_LAUNCH();
  nll_kernel<<<1, 1024, 0, s>>>(logp, labels, loss, rows, classes);
  DH_LAUNCH();
}
void softmax_ce_bwd(cudaStream_t s, const float* logp, const int* labels, float* dx, int rows, int classes) {
  int th = classes >= 1024 ? 1024 : (classes >= 256 ? 256 : 128);
  ce_bwd_kernel<<<rows, th, 0, s>>>(logp, labels, dx, classes, 1.f / rows);
  DH_LAUNCH();
}
void fill_labels(cudaStream_t s, int* labels, int rows, int classes, uint64_t seed) {
  labels_kernel<<<grid_for(rows), kThreads, 0, s>>>(labels, rows, classes, seed);
  DH_LAUNCH();
}

void sgd_momentum(cudaStream_t s, float* p, const float* g, float* v, size_t n, float lr, float mu, float wd) {
  size_t n4 = n / 4;
  if (n4) {
    sgd_kernel<<<grid_for(n4), kThreads, 0, s>>>(reinterpret_cast<float4*>(p), reinterpret_cast<const float4*>(g),
                                                 reinterpret_cast<float4*>(v), n4, lr, mu, wd);
    DH_LAUNCH();
  }
  if (n4 * 4 < n) {
    sgd_tail_kernel<<<1, 32, 0, s>>>(p, g, v, n4 * 4, n, lr, mu, wd);
    DH_LAUNCH();
  }
}

void coll_fill(cudaStream_t s, float* x, size_t n, int rank) {
  if (!n) return;
  coll_fill_kernel<<<grid_for(n), kThreads, 0, s>>>(x, n, rank);
  DH_LAUNCH();
}
void coll_check(cudaStream_t s, const float* y, size_t n, CollCheck kind, int rank, int nranks, size_t npr, int root,
                unsigned long long* bad) {
  if (!n) return;
  coll_check_kernel<<<grid_for(n), kThreads, 0, s>>>(y, n, static_cast<int>(kind), rank, nranks, npr, root, bad);
  DH_LAUNCH();
}

}  // namespace dh
