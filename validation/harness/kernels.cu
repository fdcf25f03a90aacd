// kernels mode: times the kernels that data-parallel training of the zoo models runs, one CSV per
// kernel kind. See validation/README.md for the command line and the output schemas.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <sys/stat.h>

#include "conv_graph.hpp"
#include "device_kernels.hpp"
#include "modes.hpp"
#include "provenance.hpp"
#include "shapes.hpp"
#include "train_kernels.hpp"
#include "util.hpp"

namespace dh {

namespace {

// ---------------------------------------------------------------- library error checks
void check_cudnn(cudnnStatus_t s, const char* expr) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  std::string msg = std::string(expr) + ": " + cudnnGetErrorString(s);
  int cat = static_cast<int>(s) / 1000 * 1000;
  if (cat == 2000 || cat == 3000) throw NotSupported(msg);
  if (s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) throw NoMemory(msg);
  // Internal / execution failures: find out whether the context survived.
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw CudaError(msg + " / " + cudaGetErrorString(e), e);
  throw NotSupported(msg);
}
#define DH_CUDNN(x) check_cudnn((x), #x)

void check_cublas(cublasStatus_t s, const char* expr) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = std::string(expr) + ": " + cublasGetStatusString(s);
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw NoMemory(msg);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) throw NotSupported(msg);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw CudaError(msg + " / " + cudaGetErrorString(e), e);
  throw NotSupported(msg);
}
#define DH_CUBLAS(x) check_cublas((x), #x)

// RAII descriptors
struct TensorDesc {
  cudnnTensorDescriptor_t d{};
  TensorDesc() { DH_CUDNN(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  void nchw(cudnnDataType_t t, int n, int c, int h, int w) {
    DH_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, t, n, c, h, w));
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d{};
  FilterDesc() { DH_CUDNN(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d{};
  ConvDesc() { DH_CUDNN(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d{};
  PoolDesc() { DH_CUDNN(cudnnCreatePoolingDescriptor(&d)); }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d); }
};

const char* fwd_algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "UNKNOWN";
  }
}
const char* bwd_data_algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "UNKNOWN";
  }
}
const char* bwd_filter_algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "UNKNOWN";
  }
}
const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH: return "fma";
    default: return "unknown";
  }
}

// ---------------------------------------------------------------- items (one shape at one batch)
struct ConvItem {
  int N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, g;
  std::string source;
  int P() const { return (H + 2 * ph - dh * (R - 1) - 1) / sh + 1; }
  int Q() const { return (W + 2 * pw - dw * (S - 1) - 1) / sw + 1; }
  double flops() const { return 2.0 * N * K * P() * Q() * (double(C) / g) * R * S; }
  double elems() const { return double(N) * C * H * W + double(N) * K * P() * Q() + double(K) * (C / g) * R * S; }
};
struct LinearItem {
  int B, in, out;
  std::string source;
};
struct BnItem {
  int N, C, H, W;
  std::string source;
};
struct PoolItem {
  std::string mode;
  int N, C, H, W, R, S, stride, pad;
  std::string source;
};
struct EltItem {
  std::string op;
  long long elements;
  std::string source;
};
struct ConcatItem {  // one input's copy into (fwd) or out of (bwd) its slice of a concatenation
  int N, Cs, Cd;
  long long HW;
  std::string source;
};
struct SoftmaxItem {
  int N, classes;
  std::string source;
};
struct SgdItem {
  long long params;
  std::string source;
};

const std::vector<std::string> kAllKinds = {"gemm", "batchnorm", "activation", "pool", "add",
                                            "concat", "softmax_ce", "sgd_update", "conv2d"};

const std::vector<std::string> kTail = {"impl", "time_median_s", "time_min_s", "time_spread_s", "repeats", "source"};
// time_b2b_s (--back-to-back): the mean per call of the repeats enqueued with no event between them.
std::vector<std::string> header(std::vector<std::string> h, bool back_to_back) {
  h.insert(h.end(), kTail.begin(), kTail.end());
  if (back_to_back) h.insert(h.end(), {"time_b2b_s", "host_enqueue_s"});
  return h;
}

std::string I(long long v) { return std::to_string(v); }

// cudnnFind*AlgorithmEx lists its results fastest first: the first that succeeded, or NotSupported.
template <class Perf>
Perf first_success(const Perf* perf, int got, const char* none) {
  for (int i = 0; i < got; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) return perf[i];
  throw NotSupported(none);
}

// ---------------------------------------------------------------- the measuring context
struct Ctx {
  int device = 0;
  cudaStream_t stream{};
  cudnnHandle_t cudnn{};
  cublasHandle_t cublas{};
  void* cublas_ws = nullptr;
  size_t cublas_ws_bytes = 32u << 20;
  void* conv_ws = nullptr;
  size_t conv_ws_bytes = 0;
  std::unique_ptr<Arena> arena;
  TimeCfg tcfg;
  std::vector<std::string> modes;  // fp32, bf16
  std::string out;
  std::map<std::string, std::unique_ptr<Csv>> csv;
  std::unique_ptr<Csv> skipped;
  std::map<std::string, long> rows_by_kind, skipped_by_kind;
  uint64_t seed = 1;
  bool verbose = false;
  std::string conv_api = "legacy";  // legacy: cudnnFind*AlgorithmEx; graph: backend API, plans benchmarked
  int graph_max_plans = 10;
  bool conv_nhwc = false;  // --conv-layout nhwc: graph-API convolutions on channels_last strides
  // --log-engines: every engine configuration the graph API's autotuner timed, one row each
  // (conv2d_engines.csv), beside the fastest one's row in conv2d.csv.
  std::unique_ptr<Csv> engines;
  struct Recent {
    std::string kind, pass, mode;
    Stats s;
  };
  std::vector<Recent> recent;  // rows written since the caller last cleared it (sanity figures)

  DType dtype_of(const std::string& mode) const { return mode == "bf16" ? DType::BF16 : DType::F32; }
  cudnnDataType_t cudnn_type(const std::string& mode) const {
    return mode == "bf16" ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  }
  void* alloc_filled(size_t n, DType t, float lo = -1.f, float hi = 1.f) {
    void* p = arena->alloc(std::max<size_t>(n, 1) * dtype_size(t));
    fill_uniform(stream, p, n, t, ++seed, lo, hi);
    return p;
  }
  void row(const std::string& kind, std::vector<std::string> cells, const char* impl, const Stats& s,
           const std::string& source) {
    cells.push_back(impl);
    cells.push_back(sig4(s.median));
    cells.push_back(sig4(s.min));
    cells.push_back(sig4(s.spread()));
    cells.push_back(I(s.repeats));
    cells.push_back(source);
    if (tcfg.back_to_back) cells.insert(cells.end(), {sig4(s.back_to_back), sig4(s.host_enqueue)});
    csv.at(kind)->row(cells);
    ++rows_by_kind[kind];
    recent.push_back({kind, cells[1], cells[2], s});
  }
  // Runs fn; a shape that does not fit or is refused becomes a row of skipped.csv.
  template <class F>
  void guard(const std::string& kind, const std::string& pass, const std::string& mode, const std::string& shape,
             F&& fn) {
    std::string reason;
    try {
      fn();
      return;
    } catch (const NoMemory& e) {
      reason = std::string("no_memory: ") + e.what();
    } catch (const NotSupported& e) {
      reason = std::string("not_supported: ") + e.what();
    } catch (const CudaError& e) {
      if (e.sticky) throw;
      reason = std::string("cuda_error: ") + e.what();
      cudaGetLastError();
    }
    for (auto& c : reason)
      if (c == ',' || c == '\n') c = ';';
    skipped->row({kind, pass, mode, shape, reason});
    ++skipped_by_kind[kind];
    if (verbose) std::fprintf(stderr, "skipped %s %s %s %s: %s\n", kind.c_str(), pass.c_str(), mode.c_str(),
                              shape.c_str(), reason.c_str());
  }

  // Each math mode in turn on an empty arena: fn(mode, dtype) inside guard(), so that a shape one mode
  // cannot run is a skipped row, not a stopped sweep.
  template <class F>
  void for_each_mode(const std::string& kind, const std::string& shape, F&& fn) {
    for (const auto& mode : modes) {
      arena->reset();
      const DType dt = dtype_of(mode);
      guard(kind, "all", mode, shape, [&] { fn(mode, dt); });
    }
    arena->reset();
  }

  // ---------------------------------------------------------------- conv2d
  void conv(const ConvItem& it, const std::vector<std::string>& passes) {
    std::ostringstream shape;
    shape << "N=" << it.N << ";C=" << it.C << ";H=" << it.H << ";W=" << it.W << ";K=" << it.K << ";R=" << it.R
          << ";S=" << it.S << ";stride=" << it.sh << "x" << it.sw << ";pad=" << it.ph << "x" << it.pw
          << ";dil=" << it.dh << "x" << it.dw << ";groups=" << it.g;
    for_each_mode("conv2d", shape.str(), [&](const std::string& mode, DType dt) {
      auto t = cudnn_type(mode);
      TensorDesc x, y;
      FilterDesc w;
      ConvDesc cd;
      x.nchw(t, it.N, it.C, it.H, it.W);
      DH_CUDNN(cudnnSetFilter4dDescriptor(w.d, t, CUDNN_TENSOR_NCHW, it.K, it.C / it.g, it.R, it.S));
      DH_CUDNN(cudnnSetConvolution2dDescriptor(cd.d, it.ph, it.pw, it.sh, it.sw, it.dh, it.dw,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      DH_CUDNN(cudnnSetConvolutionGroupCount(cd.d, it.g));
      DH_CUDNN(cudnnSetConvolutionMathType(cd.d, CUDNN_TENSOR_OP_MATH));
      int n, c, h, wd;
      DH_CUDNN(cudnnGetConvolution2dForwardOutputDim(cd.d, x.d, w.d, &n, &c, &h, &wd));
      y.nchw(t, n, c, h, wd);
      size_t nx = size_t(it.N) * it.C * it.H * it.W, ny = size_t(n) * c * h * wd,
             nw = size_t(it.K) * (it.C / it.g) * it.R * it.S;
      void* px = alloc_filled(nx, dt);
      void* pw = alloc_filled(nw, dt);
      void* py = alloc_filled(ny, dt);  // y of fwd, dy of the backward passes
      void* pdx = alloc_filled(nx, dt);
      void* pdw = alloc_filled(nw, dt);
      float alpha = 1.f, beta = 0.f;
      std::vector<std::string> base = {"conv2d", "", mode, dtype_name(dt), I(it.N), I(it.C), I(it.H), I(it.W),
                                       I(it.K), I(it.R), I(it.S), I(it.sh), I(it.sw), I(it.ph), I(it.pw),
                                       I(it.dh), I(it.dw), I(it.g), I(h), I(wd)};
      for (const auto& pass : passes) {
        guard("conv2d", pass, mode, shape.str(), [&] {
          std::vector<std::string> cells = base;
          cells[1] = pass;
          const int kMax = 16;
          int got = 0;
          Stats s;
          if (conv_api == "graph") {
            ConvGeom geo{it.N, it.C, it.H, it.W, it.K, it.R, it.S, it.sh, it.sw, it.ph, it.pw, it.dh, it.dw, it.g,
                         h, wd, conv_nhwc};
            void* gx = pass == "bwd_data" ? pdx : px;
            void* gw = pass == "bwd_filter" ? pdw : pw;
            GraphPlanChoice ch;
            auto run = make_conv_graph(cudnn, pass, geo, t, gx, gw, py, conv_ws, conv_ws_bytes, graph_max_plans,
                                       stream, &ch);
            Stats gs = time_on_gpu(stream, run, tcfg);
            cells.insert(cells.end(), {ch.name, "graph_tried_" + std::to_string(ch.tried), I(ch.workspace)});
            row("conv2d", cells, conv_nhwc ? "cudnn_graph_autotune_nhwc" : "cudnn_graph_autotune", gs, it.source);
            if (engines)
              for (size_t r = 0; r < ch.candidates.size(); ++r) {
                const GraphCandidate& e = ch.candidates[r];
                std::vector<std::string> ec(cells.begin(), cells.begin() + static_cast<long>(base.size()));
                ec.insert(ec.end(), {I(static_cast<long long>(r)), e.fallback ? "fallback" : "instant", I(e.engine),
                                     I(e.workspace), e.time_s < 0 ? "" : sig4(e.time_s), e.chosen ? "1" : "0",
                                     it.source});
                engines->row(ec);
              }
            return;
          }
          // cudnnFind*AlgorithmEx, then the fastest algorithm that succeeded timed with its own math type.
          // The three passes' find and run calls take their operands in one order: two inputs (a, b),
          // then the output (c), each a descriptor and a pointer.
          auto measure = [&](auto* perf, auto find, auto run, auto ad, void* a, auto bd, void* b, auto cdesc, void* c,
                             const char* none, auto&& algo_name) {
            DH_CUDNN(find(cudnn, ad, a, bd, b, cd.d, cdesc, c, kMax, &got, perf, conv_ws, conv_ws_bytes));
            const auto p = first_success(perf, got, none);
            DH_CUDNN(cudnnSetConvolutionMathType(cd.d, p.mathType));
            s = time_on_gpu(stream, [&] {
              DH_CUDNN(run(cudnn, &alpha, ad, a, bd, b, cd.d, p.algo, conv_ws, p.memory, &beta, cdesc, c));
            }, tcfg);
            cells.insert(cells.end(), {algo_name(p.algo), math_name(p.mathType), I(p.memory)});
          };
          if (pass == "fwd") {
            cudnnConvolutionFwdAlgoPerf_t perf[kMax];
            measure(perf, cudnnFindConvolutionForwardAlgorithmEx, cudnnConvolutionForward, x.d, px, w.d, pw, y.d, py,
                    "no forward algorithm succeeded", fwd_algo_name);
          } else if (pass == "bwd_data") {
            cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
            measure(perf, cudnnFindConvolutionBackwardDataAlgorithmEx, cudnnConvolutionBackwardData, w.d, pw, y.d, py, x.d,
                    pdx, "no backward-data algorithm succeeded", bwd_data_algo_name);
          } else {
            cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
            measure(perf, cudnnFindConvolutionBackwardFilterAlgorithmEx, cudnnConvolutionBackwardFilter, x.d, px, y.d, py,
                    w.d, pdw, "no backward-filter algorithm succeeded", bwd_filter_algo_name);
          }
          DH_CUDNN(cudnnSetConvolutionMathType(cd.d, CUDNN_TENSOR_OP_MATH));
          row("conv2d", cells, "cudnn_find_ex", s, it.source);
        });
      }
    });
  }

  // ---------------------------------------------------------------- gemm (nn.Linear)
  // Row-major PyTorch tensors seen by column-major cuBLAS, as torch.nn.functional.linear does:
  //   fwd        Y[B,out] = X[B,in] W[out,in]^T : M=out N=B K=in   transA=T transB=N
  //   bwd_data  dX[B,in]  = dY[B,out] W          : M=in  N=B K=out  transA=N transB=N
  //   bwd_weight dW[out,in] = dY^T X             : M=in  N=out K=B  transA=N transB=T
  Stats gemm_once(const std::string& mode, char ta, char tb, int M, int N, int K, const void* A, const void* B,
                  void* C, cublasComputeType_t compute) {
    cudaDataType_t t = mode == "bf16" ? CUDA_R_16BF : CUDA_R_32F;
    int lda = ta == 'N' ? M : K, ldb = tb == 'N' ? K : N, ldc = M;
    float alpha = 1.f, beta = 0.f;
    auto opA = ta == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T, opB = tb == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T;
    return time_on_gpu(stream, [&] {
      DH_CUBLAS(cublasGemmEx(cublas, opA, opB, M, N, K, &alpha, A, t, lda, B, t, ldb, &beta, C, t, ldc, compute,
                             CUBLAS_GEMM_DEFAULT));
    }, tcfg);
  }
  void gemm(const LinearItem& it) {
    std::string shape = "B=" + I(it.B) + ";in=" + I(it.in) + ";out=" + I(it.out);
    for_each_mode("gemm", shape, [&](const std::string& mode, DType dt) {
      size_t nx = size_t(it.B) * it.in, nw = size_t(it.in) * it.out, ny = size_t(it.B) * it.out;
      void* X = alloc_filled(nx, dt);
      void* Wt = alloc_filled(nw, dt);
      void* Y = alloc_filled(ny, dt);
      void* dX = alloc_filled(nx, dt);
      void* dW = alloc_filled(nw, dt);
      struct P {
        const char* pass;
        char ta, tb;
        int M, N, K;
        const void *A, *B;
        void* C;
      };
      P ps[3] = {{"fwd", 'T', 'N', it.out, it.B, it.in, Wt, X, Y},
                 {"bwd_data", 'N', 'N', it.in, it.B, it.out, Wt, Y, dX},
                 {"bwd_weight", 'N', 'T', it.in, it.out, it.B, X, Y, dW}};
      for (auto& p : ps) {
        guard("gemm", p.pass, mode, shape, [&] {
          Stats s = gemm_once(mode, p.ta, p.tb, p.M, p.N, p.K, p.A, p.B, p.C, CUBLAS_COMPUTE_32F);
          row("gemm", {"gemm", p.pass, mode, dtype_name(dt), I(p.M), I(p.N), I(p.K), std::string(1, p.ta),
                       std::string(1, p.tb), I(it.B), I(it.in), I(it.out)},
              "cublasGemmEx", s, it.source);
        });
      }
    });
  }

  // ---------------------------------------------------------------- batchnorm (training)
  void batchnorm(const BnItem& it) {
    std::string shape = "N=" + I(it.N) + ";C=" + I(it.C) + ";H=" + I(it.H) + ";W=" + I(it.W);
    for_each_mode("batchnorm", shape, [&](const std::string& mode, DType dt) {
      TensorDesc x, bn;
      x.nchw(cudnn_type(mode), it.N, it.C, it.H, it.W);
      DH_CUDNN(cudnnDeriveBNTensorDescriptor(bn.d, x.d, CUDNN_BATCHNORM_SPATIAL));
      size_t n = size_t(it.N) * it.C * it.H * it.W;
      void* px = alloc_filled(n, dt);
      void* py = alloc_filled(n, dt);
      void* pdy = alloc_filled(n, dt);
      void* pdx = alloc_filled(n, dt);
      float* scale = static_cast<float*>(alloc_filled(it.C, DType::F32, 0.5f, 1.5f));
      float* bias = static_cast<float*>(alloc_filled(it.C, DType::F32));
      float* rmean = static_cast<float*>(alloc_filled(it.C, DType::F32));
      float* rvar = static_cast<float*>(alloc_filled(it.C, DType::F32, 0.5f, 1.5f));
      float* smean = static_cast<float*>(alloc_filled(it.C, DType::F32));
      float* sinv = static_cast<float*>(alloc_filled(it.C, DType::F32, 0.5f, 1.5f));
      float* dscale = static_cast<float*>(alloc_filled(it.C, DType::F32));
      float* dbias = static_cast<float*>(alloc_filled(it.C, DType::F32));
      float one = 1.f, zero = 0.f;
      const double eps = 1e-5;
      std::vector<std::string> cells = {"batchnorm", "fwd", mode, dtype_name(dt), I(it.N), I(it.C), I(it.H), I(it.W)};
      guard("batchnorm", "fwd", mode, shape, [&] {
        Stats s = time_on_gpu(stream, [&] {
          DH_CUDNN(cudnnBatchNormalizationForwardTraining(cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x.d, px, x.d,
                                                          py, bn.d, scale, bias, 0.1, rmean, rvar, eps, smean,
                                                          sinv));
        }, tcfg);
        row("batchnorm", cells, "cudnn", s, it.source);
      });
      guard("batchnorm", "bwd", mode, shape, [&] {
        Stats s = time_on_gpu(stream, [&] {
          DH_CUDNN(cudnnBatchNormalizationBackward(cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x.d, px,
                                                   x.d, pdy, x.d, pdx, bn.d, scale, dscale, dbias, eps, smean,
                                                   sinv));
        }, tcfg);
        cells[1] = "bwd";
        row("batchnorm", cells, "cudnn", s, it.source);
      });
    });
  }

  // ---------------------------------------------------------------- pooling
  void pool(const PoolItem& it) {
    std::string shape = "mode=" + it.mode + ";N=" + I(it.N) + ";C=" + I(it.C) + ";H=" + I(it.H) + ";W=" + I(it.W) +
                        ";R=" + I(it.R) + ";S=" + I(it.S) + ";stride=" + I(it.stride) + ";pad=" + I(it.pad);
    for_each_mode("pool", shape, [&](const std::string& mode, DType dt) {
      TensorDesc x, y;
      PoolDesc pd;
      x.nchw(cudnn_type(mode), it.N, it.C, it.H, it.W);
      DH_CUDNN(cudnnSetPooling2dDescriptor(
          pd.d, it.mode == "max" ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
          CUDNN_NOT_PROPAGATE_NAN, it.R, it.S, it.pad, it.pad, it.stride, it.stride));
      int n, c, h, w;
      DH_CUDNN(cudnnGetPooling2dForwardOutputDim(pd.d, x.d, &n, &c, &h, &w));
      if (h < 1 || w < 1) throw NotSupported("empty pooling output");
      y.nchw(cudnn_type(mode), n, c, h, w);
      size_t nx = size_t(it.N) * it.C * it.H * it.W, ny = size_t(n) * c * h * w;
      void* px = alloc_filled(nx, dt);
      void* py = alloc_filled(ny, dt);
      void* pdy = alloc_filled(ny, dt);
      void* pdx = alloc_filled(nx, dt);
      float one = 1.f, zero = 0.f;
      std::vector<std::string> cells = {"pool", "fwd", mode, dtype_name(dt), it.mode, I(it.N), I(it.C), I(it.H),
                                        I(it.W), I(it.R), I(it.S), I(it.stride), I(it.pad), I(h), I(w)};
      guard("pool", "fwd", mode, shape, [&] {
        Stats s = time_on_gpu(stream, [&] {
          DH_CUDNN(cudnnPoolingForward(cudnn, pd.d, &one, x.d, px, &zero, y.d, py));
        }, tcfg);
        row("pool", cells, "cudnn", s, it.source);
      });
      guard("pool", "bwd", mode, shape, [&] {
        Stats s = time_on_gpu(stream, [&] {
          DH_CUDNN(cudnnPoolingBackward(cudnn, pd.d, &one, y.d, py, y.d, pdy, x.d, px, &zero, x.d, pdx));
        }, tcfg);
        cells[1] = "bwd";
        row("pool", cells, "cudnn", s, it.source);
      });
    });
  }

  // ---------------------------------------------------------------- elementwise
  void activation(const EltItem& it) {
    std::string shape = "op=" + it.op + ";elements=" + I(it.elements);
    bool r6 = it.op == "relu6";
    for_each_mode("activation", shape, [&](const std::string& mode, DType dt) {
      size_t n = it.elements;
      void* x = alloc_filled(n, dt);
      void* y = alloc_filled(n, dt);
      void* dy = alloc_filled(n, dt);
      void* dx = alloc_filled(n, dt);
      std::vector<std::string> cells = {"activation", "fwd", mode, dtype_name(dt), it.op, I(it.elements)};
      Stats s = time_on_gpu(stream, [&] { relu_fwd(stream, dt, x, y, n, r6); }, tcfg);
      row("activation", cells, "cuda_kernel", s, it.source);
      s = time_on_gpu(stream, [&] { relu_bwd(stream, dt, y, dy, dx, n, r6); }, tcfg);
      cells[1] = "bwd";
      row("activation", cells, "cuda_kernel", s, it.source);
    });
  }
  void add(const EltItem& it) {
    std::string shape = "elements=" + I(it.elements);
    for_each_mode("add", shape, [&](const std::string& mode, DType dt) {
      size_t n = it.elements;
      void* a = alloc_filled(n, dt);
      void* b = alloc_filled(n, dt);
      void* c = alloc_filled(n, dt);
      std::vector<std::string> cells = {"add", "fwd", mode, dtype_name(dt), I(it.elements)};
      Stats s = time_on_gpu(stream, [&] { add_fwd(stream, dt, a, b, c, n); }, tcfg);
      row("add", cells, "cuda_kernel", s, it.source);
      // Values grow by b per run; with |b| <= 1 and < 200 runs that stays finite.
      s = time_on_gpu(stream, [&] { add_acc(stream, dt, c, b, n); }, tcfg);
      cells[1] = "bwd";
      row("add", cells, "cuda_kernel", s, it.source);
    });
  }
  // The train mode's concatenation: one kernel per input, copying it into its channel slice of the
  // output (forward) or its gradient out of the output's gradient (backward); op "slice" names that
  // lowering (PyTorch's torch.cat is one kernel for all inputs).
  void concat(const ConcatItem& it) {
    std::string shape = "N=" + I(it.N) + ";Cs=" + I(it.Cs) + ";Cd=" + I(it.Cd) + ";HW=" + I(it.HW);
    for_each_mode("concat", shape, [&](const std::string& mode, DType dt) {
      const size_t small_n = size_t(it.N) * it.Cs * it.HW, big_n = size_t(it.N) * it.Cd * it.HW;
      void* small = alloc_filled(small_n, dt);
      void* big = alloc_filled(big_n, dt);
      const int off = it.Cd - it.Cs;  // the last slice, as the newest input of a dense block lands
      std::vector<std::string> cells = {"concat", "fwd", mode, dtype_name(dt), "slice", I(small_n), I(it.N), I(it.Cs), I(it.Cd), I(it.HW)};
      Stats s = time_on_gpu(stream, [&] { concat_slice(stream, dt, small, big, it.N, it.Cs, it.Cd, off, it.HW, true, false); }, tcfg);
      row("concat", cells, "cuda_kernel", s, it.source);
      s = time_on_gpu(stream, [&] { concat_slice(stream, dt, small, big, it.N, it.Cs, it.Cd, off, it.HW, false, false); }, tcfg);
      cells[1] = "bwd";
      row("concat", cells, "cuda_kernel", s, it.source);
    });
  }
  // Cross-entropy runs in fp32 in both math modes (autocast casts its input to fp32): one
  // measurement, math_mode "any".
  void softmax(const SoftmaxItem& it) {
    std::string shape = "N=" + I(it.N) + ";classes=" + I(it.classes);
    arena->reset();
    guard("softmax_ce", "all", "any", shape, [&] {
      size_t n = size_t(it.N) * it.classes;
      float* x = static_cast<float*>(alloc_filled(n, DType::F32, -4.f, 4.f));
      float* logp = static_cast<float*>(alloc_filled(n, DType::F32));
      float* dx = static_cast<float*>(alloc_filled(n, DType::F32));
      float* loss = static_cast<float*>(alloc_filled(1, DType::F32));
      int* labels = static_cast<int*>(arena->alloc(sizeof(int) * it.N));
      fill_labels(stream, labels, it.N, it.classes, ++seed);
      std::vector<std::string> cells = {"softmax_ce", "fwd", "any", "fp32", I(it.N), I(it.classes)};
      Stats s = time_on_gpu(stream, [&] { softmax_ce_fwd(stream, x, logp, labels, loss, it.N, it.classes); }, tcfg);
      row("softmax_ce", cells, "cuda_kernel", s, it.source);
      s = time_on_gpu(stream, [&] { softmax_ce_bwd(stream, logp, labels, dx, it.N, it.classes); }, tcfg);
      cells[1] = "bwd";
      row("softmax_ce", cells, "cuda_kernel", s, it.source);
    });
    arena->reset();
  }
  // Parameters (and so gradients and the momentum buffer) are fp32 in both math modes.
  void sgd(const SgdItem& it) {
    std::string shape = "parameters=" + I(it.params);
    arena->reset();
    guard("sgd_update", "update", "any", shape, [&] {
      size_t n = it.params;
      float* p = static_cast<float*>(alloc_filled(n, DType::F32));
      float* g = static_cast<float*>(alloc_filled(n, DType::F32));
      float* v = static_cast<float*>(alloc_filled(n, DType::F32));
      Stats s = time_on_gpu(stream, [&] { sgd_momentum(stream, p, g, v, n, 1e-3f, 0.9f, 1e-4f); }, tcfg);
      row("sgd_update", {"sgd_update", "update", "any", "fp32", I(it.params)}, "cuda_kernel", s, it.source);
    });
    arena->reset();
  }
};

// ---------------------------------------------------------------- shape lists
template <class T>
std::vector<T> interleave(std::vector<T> zoo, std::vector<T> rnd, std::mt19937_64& rng) {
  std::shuffle(zoo.begin(), zoo.end(), rng);
  std::shuffle(rnd.begin(), rnd.end(), rng);
  std::vector<T> out;
  size_t i = 0, j = 0;
  double ratio = zoo.empty() ? 0 : double(rnd.size()) / (zoo.size() + rnd.size());
  while (i < zoo.size() || j < rnd.size()) {
    bool take_rnd = j < rnd.size() && (i >= zoo.size() || double(j) < ratio * (i + j + 1));
    out.push_back(take_rnd ? rnd[j++] : zoo[i++]);
  }
  return out;
}

int scale_dim(std::mt19937_64& rng, int v, int lo, int hi) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int s = static_cast<int>(std::lround(v * std::pow(2.0, u(rng))));
  return std::max(lo, std::min(hi, s));
}

bool conv_ok(const ConvItem& c, double max_bytes, double max_flops) {
  if (c.C % c.g || c.K % c.g) return false;
  if (c.H + 2 * c.ph - c.dh * (c.R - 1) - 1 < 0 || c.W + 2 * c.pw - c.dw * (c.S - 1) - 1 < 0) return false;
  double bytes = 4.0 * (2 * c.elems());  // x, y, w and their gradients in fp32
  return bytes <= max_bytes && c.flops() <= max_flops;
}

std::vector<ConvItem> random_convs(const Zoo& z, int count, std::mt19937_64& rng, double max_bytes, double max_flops) {
  std::vector<ConvItem> out;
  std::uniform_real_distribution<double> u(0, 1);
  int tries = 0;
  while (static_cast<int>(out.size()) < count && tries++ < count * 50) {
    ConvItem c{};
    c.N = log_uniform(rng, 1, 256);
    if (!z.conv.empty() && u(rng) < 0.6) {  // perturb a zoo layer
      const auto& b = z.conv[rng() % z.conv.size()];
      c.H = scale_dim(rng, b.H, 1, 320);
      c.W = u(rng) < 0.8 ? c.H * b.W / std::max(1, b.H) : scale_dim(rng, b.W, 1, 320);
      c.W = std::max(1, c.W);
      c.R = b.R, c.S = b.S, c.sh = b.sh, c.sw = b.sw, c.ph = b.ph, c.pw = b.pw, c.dh = b.dh, c.dw = b.dw;
      if (b.groups > 1 && b.groups == b.C && b.C == b.K) {  // depthwise stays depthwise
        c.C = c.K = c.g = scale_dim(rng, b.C, 1, 4096);
      } else {
        c.C = b.C <= 4 ? b.C : scale_dim(rng, b.C, 1, 4096);
        c.K = scale_dim(rng, b.K, 1, 4096);
        c.g = 1;
      }
      c.source = "random~" + b.source;
    } else {  // anywhere in a sane range
      static const int Rs[] = {1, 1, 1, 3, 3, 3, 3, 5, 7};
      c.R = Rs[rng() % 9];
      c.S = u(rng) < 0.9 ? c.R : Rs[rng() % 9];
      c.sh = c.sw = u(rng) < 0.75 ? 1 : 2;
      c.ph = u(rng) < 0.85 ? c.R / 2 : 0;
      c.pw = u(rng) < 0.85 ? c.S / 2 : 0;
      c.dh = c.dw = 1;
      c.H = log_uniform(rng, 3, 300);
      c.W = u(rng) < 0.85 ? c.H : log_uniform(rng, 3, 300);
      if (u(rng) < 0.1) {
        c.C = c.K = c.g = log_uniform(rng, 8, 2048);
      } else {
        c.C = u(rng) < 0.1 ? 3 : log_uniform(rng, 1, 4096);
        c.K = log_uniform(rng, 1, 4096);
        c.g = 1;
      }
      c.source = "random";
    }
    if (conv_ok(c, max_bytes, max_flops)) out.push_back(c);
  }
  return out;
}

std::vector<std::string> conv_passes(const std::vector<std::string>& want) {
  std::vector<std::string> p;
  for (auto& s : want)
    if (s == "fwd" || s == "bwd_data" || s == "bwd_filter") p.push_back(s);
  if (p.empty()) p = {"fwd", "bwd_data", "bwd_filter"};
  return p;
}

// ---------------------------------------------------------------- sanity figures
nlohmann::json sanity(Ctx& c) {
  nlohmann::json j;
  auto print = [](const std::string& what, double v, const char* unit, const std::string& ref) {
    std::printf("sanity: %-44s %9.1f %s   %s\n", what.c_str(), v, unit, ref.c_str());
  };
  // GEMM 8192^3 in each math mode (+ TF32, the rate TF32 convolutions can reach).
  const int n = 8192;
  struct G {
    const char* name;
    std::string mode;
    cublasComputeType_t ct;
    double peak;
  };
  for (G g : {G{"gemm 8192^3 fp32 (strict)", "fp32", CUBLAS_COMPUTE_32F, 67},
              G{"gemm 8192^3 tf32", "fp32", CUBLAS_COMPUTE_32F_FAST_TF32, 495},
              G{"gemm 8192^3 bf16 (fp32 accumulate)", "bf16", CUBLAS_COMPUTE_32F, 989}}) {
    c.guard("sanity", "gemm", g.mode, g.name, [&] {
      c.arena->reset();
      DType dt = c.dtype_of(g.mode);
      void* A = c.alloc_filled(size_t(n) * n, dt);
      void* B = c.alloc_filled(size_t(n) * n, dt);
      void* C = c.alloc_filled(size_t(n) * n, dt);
      Stats s = c.gemm_once(g.mode, 'N', 'N', n, n, n, A, B, C, g.ct);
      double tf = 2.0 * n * n * n / s.median / 1e12;
      print(g.name, tf, "TFLOP/s", "(H100 SXM dense peak " + sig4(g.peak) + ")");
      j[g.name] = {{"tflops", tf}, {"time_median_s", s.median}, {"h100_sxm_peak_tflops", g.peak}};
    });
  }
  // A large 3x3 convolution, all passes, both modes.
  ConvItem cv{128, 256, 56, 56, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, "sanity"};
  c.recent.clear();
  c.conv(cv, {"fwd", "bwd_data", "bwd_filter"});
  for (auto& r : c.recent) {
    double tf = cv.flops() / r.s.median / 1e12;
    std::string name = "conv 128x256x56x56 3x3 K256 " + r.pass + " " + r.mode;
    print(name, tf, "TFLOP/s", r.mode == "fp32" ? "(TF32 peak 495)" : "(BF16 peak 989)");
    j[name] = {{"tflops", tf}, {"time_median_s", r.s.median}};
  }
  // D2D copy, batchnorm and relu bandwidth on ~1 GiB tensors, fp32.
  c.guard("sanity", "copy", "fp32", "copy 1GiB", [&] {
    c.arena->reset();
    size_t bytes = size_t(1) << 30;
    void* a = c.alloc_filled(bytes / 4, DType::F32);
    void* b = c.alloc_filled(bytes / 4, DType::F32);
    Stats s = time_on_gpu(c.stream, [&] { DH_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c.stream)); },
                          c.tcfg);
    double gbs = 2.0 * bytes / s.median / 1e9;
    print("device copy 1 GiB (read+write)", gbs, "GB/s", "(H100 SXM 3350, H200 4800)");
    j["copy_1GiB"] = {{"GBps", gbs}, {"time_median_s", s.median}};
    size_t ne = bytes / 4;
    s = time_on_gpu(c.stream, [&] { relu_fwd(c.stream, DType::F32, a, b, ne, false); }, c.tcfg);
    gbs = 2.0 * bytes / s.median / 1e9;
    print("relu fwd fp32 2^28 elements (read+write)", gbs, "GB/s", "");
    j["relu_fwd_fp32_2^28"] = {{"GBps", gbs}, {"time_median_s", s.median}};
  });
  BnItem bn{256, 64, 112, 112, "sanity"};
  c.recent.clear();
  c.batchnorm(bn);
  for (auto& r : c.recent) {
    // Lower bound of traffic: fwd reads x, writes y; bwd reads x and dy, writes dx.
    double bytes = double(bn.N) * bn.C * bn.H * bn.W * (r.mode == "bf16" ? 2 : 4) * (r.pass == "fwd" ? 2 : 3);
    std::string name = "batchnorm 256x64x112x112 " + r.pass + " " + r.mode + " (min bytes)";
    print(name, bytes / r.s.median / 1e9, "GB/s", "");
    j[name] = {{"GBps", bytes / r.s.median / 1e9}, {"time_median_s", r.s.median}};
  }
  c.arena->reset();
  return j;
}

}  // namespace

int run_kernels(const Args& a) {
  Ctx c;
  c.device = static_cast<int>(a.integer("device", 0));
  c.out = a.str("out", "");
  if (c.out.empty()) throw Error("kernels: --out DIR is required");
  double budget_s = a.num("budget-s", 300);
  c.modes = a.list("math", "fp32,bf16");
  for (auto& m : c.modes)
    if (m != "fp32" && m != "bf16") throw Error("--math: fp32 and/or bf16, not '" + m + "'");
  std::vector<std::string> kinds = a.list("kinds", "all");
  if (kinds.size() == 1 && kinds[0] == "all") kinds = kAllKinds;
  for (auto& k : kinds)
    if (std::find(kAllKinds.begin(), kAllKinds.end(), k) == kAllKinds.end()) throw Error("--kinds: unknown kind " + k);
  auto batches = a.int_list("batches", "1,2,4,8,16,32,64,96,128,192,256");
  std::string models_dir = a.str("models-dir", "");
  if (models_dir.empty()) {
    struct stat st{};
    models_dir = stat("configs/models", &st) == 0 ? "configs/models" : DTSIM_SOURCE_MODELS_DIR;
  }
  auto only_models = a.list("models", "");
  auto skip_models = a.list("skip-models", "tiny");
  double random_frac = a.num("random-frac", 0.35);
  c.seed = static_cast<uint64_t>(a.integer("seed", 1));
  c.tcfg.target_s = a.num("target-ms", 10) * 1e-3;
  c.tcfg.min_repeats = static_cast<int>(a.integer("min-repeats", 5));
  c.tcfg.max_repeats = static_cast<int>(a.integer("max-repeats", 30));
  c.tcfg.warmup = static_cast<int>(a.integer("warmup", 2));
  c.tcfg.back_to_back = a.has("back-to-back");
  c.conv_ws_bytes = static_cast<size_t>(a.integer("workspace-mib", 4096)) << 20;
  long long max_items = a.integer("max-items", 0);  // per kind; 0 = until the budget is spent
  bool do_sanity = !a.has("no-sanity");
  c.verbose = a.has("verbose");
  double max_conv_gflop = a.num("max-conv-gflop", 4000);
  auto passes = conv_passes(a.list("conv-passes", "fwd,bwd_data,bwd_filter"));
  c.conv_api = a.str("conv-api", "legacy");
  if (c.conv_api != "legacy" && c.conv_api != "graph") throw Error("--conv-api: legacy or graph");
  c.graph_max_plans = static_cast<int>(a.integer("graph-max-plans", 10));
  const std::string conv_layout = a.str("conv-layout", "nchw");
  if (conv_layout != "nchw" && conv_layout != "nhwc") throw Error("--conv-layout: nchw or nhwc");
  if (conv_layout == "nhwc" && c.conv_api != "graph") throw Error("--conv-layout nhwc needs --conv-api graph");
  c.conv_nhwc = conv_layout == "nhwc";
  const bool log_engines = a.has("log-engines");
  // Budget shares of the kinds run before conv2d, which gets whatever is left.
  std::map<std::string, double> share = {{"gemm", 0.10},      {"batchnorm", 0.06}, {"activation", 0.025},
                                         {"pool", 0.03},      {"add", 0.015},      {"concat", 0.015}, {"softmax_ce", 0.01},
                                         {"sgd_update", 0.01}, {"conv2d", 1.0}};
  for (auto& kv : a.list("share", "")) {
    auto p = split(kv, '=');
    if (p.size() != 2 || !share.count(p[0])) throw Error("--share: kind=fraction, not '" + kv + "'");
    share[p[0]] = std::stod(p[1]);
  }
  bool list_only = a.has("list-shapes");
  a.str("git-commit", "");  // read by collect_provenance
  auto unused = a.unused();
  if (!unused.empty()) throw Error("kernels: unknown option --" + unused[0]);

  if (list_only) {  // no GPU needed: what the sweep would measure
    Zoo z = load_zoo(models_dir, only_models, skip_models);
    std::printf("zoo: %zu models (", z.models.size());
    for (auto& m : z.models) std::printf(" %s", m.c_str());
    std::printf(" )\nper-sample shapes: conv %zu, linear %zu, batchnorm %zu, pool %zu, activation %zu, add %zu, "
                "concat slices %zu, softmax %zu; x %zu batch sizes\n",
                z.conv.size(), z.linear.size(), z.bn.size(), z.pool.size(), z.act.size(), z.add.size(),
                z.concat.size(), z.softmax.size(), batches.size());
    return 0;
  }
  DH_CUDA(cudaSetDevice(c.device));
  make_dirs(c.out);
  nlohmann::json prov = collect_provenance(c.device, a, "kernels");
  prov["math_modes"] = {
      {"fp32", "PyTorch default: float data; convolutions CUDNN_TENSOR_OP_MATH (TF32 allowed), the math type of the "
               "fastest cudnnFind result; GEMMs cublasGemmEx CUBLAS_COMPUTE_32F with CUBLAS_DEFAULT_MATH (strict "
               "FP32); memory-bound kernels fp32"},
      {"bf16", "bf16 data with fp32 accumulation (CUBLAS_COMPUTE_32F, cuDNN compute type float, tensor-op math); "
               "batchnorm/activation/pool/add on bf16 tensors (batchnorm parameters fp32)"},
      {"any", "kernels that run in fp32 in both modes (softmax_ce: autocast casts to fp32; sgd_update: fp32 "
              "parameters)"}};
  prov["conv_api"] = c.conv_api;
  prov["conv_algorithm_selection"] =
      c.conv_api == "legacy"
          ? "cudnnFind*AlgorithmEx (cuDNN legacy API) over all algorithms, fastest with status SUCCESS, workspace "
            "limit " + std::to_string(c.conv_ws_bytes >> 20) + " MiB; like PyTorch 1.x's cudnn.benchmark=True (PyTorch "
            "2.x uses the graph API and may land on other engines)"
          : "cuDNN graph (backend) API as PyTorch 2.x with cudnn.benchmark=True: engine configs from heuristics "
            "INSTANT then FALLBACK, at most " + std::to_string(c.graph_max_plans) + " that finalize and fit the " +
            std::to_string(c.conv_ws_bytes >> 20) + " MiB workspace, each timed (best of 3 after one warm-up), "
            "fastest kept; algo column = eng<global engine index>";
  prov["layout"] = c.conv_nhwc ? "convolutions NHWC (torch.channels_last strides on x, w and y; impl "
                                 "cudnn_graph_autotune_nhwc); other kernels NCHW"
                               : "NCHW (PyTorch default memory format)";
  prov["timing"] = {{"method", "CUDA events around each repeat, back-to-back on one stream, after warm-up; a spin "
                                "kernel queued ahead so host launch latency is hidden; L2 not flushed"},
                    {"warmup", c.tcfg.warmup},
                    {"target_s", c.tcfg.target_s},
                    {"min_repeats", c.tcfg.min_repeats},
                    {"max_repeats", c.tcfg.max_repeats},
                    {"spread", "p90 - p10 of the repeats"},
                    {"back_to_back", c.tcfg.back_to_back
                                         ? "time_b2b_s: the same repeats enqueued again with no event between them, one "
                                           "event pair around all, total / repeats (after a spin kernel as above); "
                                           "host_enqueue_s: the host's wall time per call of that loop"
                                         : "not measured"}};
  prov["budget_s"] = budget_s;
  prov["models_dir"] = models_dir;
  prov["batches"] = batches;
  prov["seed"] = c.seed;
  write_json(c.out + "/provenance.json", prov);

  DH_CUDA(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  if (cudnnCreate(&c.cudnn) != CUDNN_STATUS_SUCCESS) throw Error("cudnnCreate failed");
  cudnnSetStream(c.cudnn, c.stream);
  if (cublasCreate(&c.cublas) != CUBLAS_STATUS_SUCCESS) throw Error("cublasCreate failed");
  cublasSetStream(c.cublas, c.stream);
  cublasSetMathMode(c.cublas, CUBLAS_DEFAULT_MATH);
  DH_CUDA(cudaMalloc(&c.cublas_ws, c.cublas_ws_bytes));
  cublasSetWorkspace(c.cublas, c.cublas_ws, c.cublas_ws_bytes);
  DH_CUDA(cudaMalloc(&c.conv_ws, c.conv_ws_bytes));
  size_t free_b = 0, total_b = 0;
  DH_CUDA(cudaMemGetInfo(&free_b, &total_b));
  size_t reserve = static_cast<size_t>(a.integer("reserve-mib", 2048)) << 20;
  size_t arena_b = free_b > reserve + (256u << 20) ? free_b - reserve : free_b / 2;
  if (a.has("arena-mib")) arena_b = std::min(arena_b, static_cast<size_t>(a.integer("arena-mib", 0)) << 20);
  c.arena = std::make_unique<Arena>(arena_b);
  std::printf("kernels: %s, arena %.1f GiB, conv workspace %zu MiB, budget %.0f s, math %s\n",
              prov["gpu"]["name"].get<std::string>().c_str(), arena_b / 1073741824.0, c.conv_ws_bytes >> 20,
              budget_s, a.str("math", "fp32,bf16").c_str());

  // Output files
  const std::map<std::string, std::vector<std::string>> cols = {
      {"conv2d", header({"kind", "pass", "math_mode", "dtype", "N", "C", "H", "W", "K", "R", "S", "stride_h",
                         "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "groups", "P", "Q", "algo", "algo_math",
                         "workspace_bytes"}, c.tcfg.back_to_back)},
      {"gemm", header({"kind", "pass", "math_mode", "dtype", "M", "N", "K", "transA", "transB", "batch",
                       "in_features", "out_features"}, c.tcfg.back_to_back)},
      {"batchnorm", header({"kind", "pass", "math_mode", "dtype", "N", "C", "H", "W"}, c.tcfg.back_to_back)},
      {"activation", header({"kind", "pass", "math_mode", "dtype", "op", "elements"}, c.tcfg.back_to_back)},
      {"pool", header({"kind", "pass", "math_mode", "dtype", "mode", "N", "C", "H", "W", "R", "S", "stride", "pad",
                       "P", "Q"}, c.tcfg.back_to_back)},
      {"add", header({"kind", "pass", "math_mode", "dtype", "elements"}, c.tcfg.back_to_back)},
      {"concat", header({"kind", "pass", "math_mode", "dtype", "op", "elements", "N", "slice_channels", "channels", "HW"}, c.tcfg.back_to_back)},
      {"softmax_ce", header({"kind", "pass", "math_mode", "dtype", "N", "classes"}, c.tcfg.back_to_back)},
      {"sgd_update", header({"kind", "pass", "math_mode", "dtype", "parameters"}, c.tcfg.back_to_back)},
  };
  for (auto& [k, h] : cols) c.csv[k] = std::make_unique<Csv>(c.out + "/" + k + ".csv", h);
  if (log_engines && c.conv_api == "graph")
    c.engines = std::make_unique<Csv>(
        c.out + "/conv2d_engines.csv",
        std::vector<std::string>{"kind", "pass", "math_mode", "dtype", "N", "C", "H", "W", "K", "R", "S", "stride_h",
                                 "stride_w", "pad_h", "pad_w", "dil_h", "dil_w", "groups", "P", "Q", "rank", "heuristic",
                                 "engine", "workspace_bytes", "time_s", "chosen", "source"});
  c.skipped = std::make_unique<Csv>(c.out + "/skipped.csv",
                                    std::vector<std::string>{"kind", "pass", "math_mode", "shape", "reason"});

  Budget budget(budget_s);
  nlohmann::json summary;
  std::string stop_reason = "budget or shape lists exhausted";
  try {
    if (do_sanity) {
      // Sanity shapes are written to the CSVs too, with source "sanity".
      summary["sanity"] = sanity(c);
    }
    Zoo z = load_zoo(models_dir, only_models, skip_models);
    std::printf("zoo: %zu models, %zu conv, %zu linear, %zu bn, %zu pool, %zu act, %zu add layer shapes\n",
                z.models.size(), z.conv.size(), z.linear.size(), z.bn.size(), z.pool.size(), z.act.size(),
                z.add.size());
    std::mt19937_64 rng(c.seed);
    auto n_random = [&](size_t zoo_n, size_t minimum) {
      size_t r = static_cast<size_t>(zoo_n * random_frac / std::max(1e-9, 1 - random_frac));
      return std::max(r, minimum);
    };
    std::uniform_real_distribution<double> u(0, 1);
    auto rand_batch = [&] { return log_uniform(rng, 1, 256); };

    auto sweep = [&](const std::string& kind, auto& items, auto&& measure) {
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) return;
      double t_end;
      if (kind == "conv2d") {
        t_end = budget.total();
      } else {
        t_end = std::min(budget.total(), budget.elapsed() + share[kind] * budget_s);
      }
      size_t done = 0;
      double t0 = budget.elapsed();
      for (auto& it : items) {
        if (budget.elapsed() >= t_end) break;
        if (max_items && static_cast<long long>(done) >= max_items) break;
        measure(it);
        ++done;
      }
      std::printf("%-11s %5zu of %5zu shapes in %6.1f s  (%ld rows, %ld skipped)\n", kind.c_str(), done, items.size(),
                  budget.elapsed() - t0, c.rows_by_kind[kind], c.skipped_by_kind[kind]);
      std::fflush(stdout);
      summary["kinds"][kind] = {{"shapes_done", done}, {"shapes_listed", items.size()},
                                {"rows", c.rows_by_kind[kind]}, {"skipped", c.skipped_by_kind[kind]},
                                {"seconds", budget.elapsed() - t0}};
    };

    // gemm
    {
      std::vector<LinearItem> zoo, rnd;
      for (auto& l : z.linear)
        for (auto b : batches) zoo.push_back({int(b), l.in, l.out, l.source});
      size_t nr = n_random(zoo.size(), 2500);
      while (rnd.size() < nr) {
        LinearItem it{u(rng) < 0.7 ? rand_batch() : log_uniform(rng, 1, 4096), log_uniform(rng, 1, 32768),
                      log_uniform(rng, 1, 32768), "random"};
        if (double(it.B) * it.in * it.out <= 1.5e11) rnd.push_back(it);
      }
      auto items = interleave(zoo, rnd, rng);
      sweep("gemm", items, [&](const LinearItem& it) { c.gemm(it); });
    }
    // batchnorm
    {
      std::vector<BnItem> zoo, rnd;
      for (auto& l : z.bn)
        for (auto b : batches) zoo.push_back({int(b), l.C, l.H, l.W, l.source});
      size_t nr = n_random(zoo.size(), 300);
      while (rnd.size() < nr) {
        int H = log_uniform(rng, 1, 256);
        BnItem it{rand_batch(), log_uniform(rng, 1, 4096), H, u(rng) < 0.9 ? H : log_uniform(rng, 1, 256), "random"};
        if (double(it.N) * it.C * it.H * it.W <= 1.2e9) rnd.push_back(it);
      }
      auto items = interleave(zoo, rnd, rng);
      sweep("batchnorm", items, [&](const BnItem& it) { c.batchnorm(it); });
    }
    // activation
    {
      std::vector<EltItem> zoo, rnd;
      for (auto& l : z.act)
        for (auto b : batches) zoo.push_back({l.op, l.elements * b, l.source});
      size_t nr = n_random(zoo.size(), 200);
      while (rnd.size() < nr)
        rnd.push_back({u(rng) < 0.8 ? "relu" : "relu6", static_cast<long long>(std::exp(u(rng) * std::log(1.5e9))),
                       "random"});
      auto items = interleave(zoo, rnd, rng);
      sweep("activation", items, [&](const EltItem& it) { c.activation(it); });
    }
    // pool
    {
      std::vector<PoolItem> zoo, rnd;
      for (auto& l : z.pool)
        for (auto b : batches) zoo.push_back({l.mode, int(b), l.C, l.H, l.W, l.R, l.S, l.stride, l.pad, l.source});
      size_t nr = n_random(zoo.size(), 200);
      while (rnd.size() < nr) {
        PoolItem it;
        it.mode = u(rng) < 0.6 ? "max" : "avg";
        it.N = rand_batch();
        it.C = log_uniform(rng, 1, 2048);
        it.H = it.W = log_uniform(rng, 2, 224);
        if (u(rng) < 0.15) {  // global average pooling
          it.mode = "avg", it.R = it.S = it.stride = it.H, it.pad = 0;
        } else {
          it.R = it.S = std::min(it.H, u(rng) < 0.5 ? 3 : 2 + int(rng() % 4));
          it.stride = 1 + int(rng() % 2);
          it.pad = it.R >= 3 && u(rng) < 0.5 ? it.R / 2 : 0;
        }
        it.source = "random";
        if (double(it.N) * it.C * it.H * it.W <= 1.2e9) rnd.push_back(it);
      }
      auto items = interleave(zoo, rnd, rng);
      sweep("pool", items, [&](const PoolItem& it) { c.pool(it); });
    }
    // add
    {
      std::vector<EltItem> zoo, rnd;
      for (auto& l : z.add)
        for (auto b : batches) zoo.push_back({"add", l.elements * b, l.source});
      size_t nr = n_random(zoo.size(), 150);
      while (rnd.size() < nr)
        rnd.push_back({"add", static_cast<long long>(std::exp(u(rng) * std::log(1.5e9))), "random"});
      auto items = interleave(zoo, rnd, rng);
      sweep("add", items, [&](const EltItem& it) { c.add(it); });
    }
    // concat: every input's slice of the zoo's concatenations at every batch, and random slices
    {
      std::vector<ConcatItem> zoo, rnd;
      for (auto& l : z.concat)
        for (auto b : batches) zoo.push_back({int(b), l.Cs, l.Cd, l.HW, l.source});
      size_t nr = n_random(zoo.size(), 300);
      while (rnd.size() < nr) {
        int H = log_uniform(rng, 1, 224);
        ConcatItem it{rand_batch(), log_uniform(rng, 1, 2048), 0, static_cast<long long>(H) * H, "random"};
        it.Cd = it.Cs + log_uniform(rng, 1, 2048);
        if (double(it.N) * it.Cd * it.HW <= 1.2e9) rnd.push_back(it);
      }
      auto items = interleave(zoo, rnd, rng);
      sweep("concat", items, [&](const ConcatItem& it) { c.concat(it); });
    }
    // softmax cross-entropy
    {
      std::vector<SoftmaxItem> zoo, rnd;
      for (auto& l : z.softmax)
        for (auto b : batches) zoo.push_back({int(b), l.classes, l.source});
      while (rnd.size() < 150) rnd.push_back({log_uniform(rng, 1, 4096), log_uniform(rng, 2, 50000), "random"});
      auto items = interleave(zoo, rnd, rng);
      sweep("softmax_ce", items, [&](const SoftmaxItem& it) { c.softmax(it); });
    }
    // sgd update
    {
      std::vector<SgdItem> zoo, rnd;
      for (auto& p : z.params) zoo.push_back({p.params, p.source});
      while (rnd.size() < 80) rnd.push_back({static_cast<long long>(std::exp(u(rng) * std::log(3e8))), "random"});
      auto items = interleave(zoo, rnd, rng);
      sweep("sgd_update", items, [&](const SgdItem& it) { c.sgd(it); });
    }
    // conv2d: the rest of the budget
    {
      double max_bytes = std::min<double>(c.arena->capacity() * 0.9, 24e9);
      std::vector<ConvItem> zoo;
      for (auto& l : z.conv)
        for (auto b : batches) {
          ConvItem it{int(b), l.C, l.H, l.W, l.K, l.R, l.S, l.sh, l.sw, l.ph, l.pw, l.dh, l.dw, l.groups, l.source};
          zoo.push_back(it);  // zoo shapes are never filtered: one that does not fit is recorded as skipped
        }
      auto rnd = random_convs(z, static_cast<int>(n_random(zoo.size(), 1000)), rng, max_bytes, max_conv_gflop * 1e9);
      auto items = interleave(zoo, rnd, rng);
      sweep("conv2d", items, [&](const ConvItem& it) { c.conv(it, passes); });
    }
  } catch (const CudaError& e) {
    if (!e.sticky) throw;
    stop_reason = std::string("stopped by a CUDA error that leaves the context unusable: ") + e.what();
    std::fprintf(stderr, "%s\n", stop_reason.c_str());
  }
  prov["run"] = summary;
  prov["run"]["stop_reason"] = stop_reason;
  prov["run"]["elapsed_s"] = budget.elapsed();
  prov["gpu"]["clocks_at_end"] = gpu_clocks_now(c.device);
  prov["date_utc_end"] = utc_now_iso();
  write_json(c.out + "/provenance.json", prov);
  std::printf("kernels: done in %.1f s; rows:", budget.elapsed());
  for (auto& [k, n] : c.rows_by_kind) std::printf(" %s=%ld", k.c_str(), n);
  std::printf("\n");
  return stop_reason.rfind("stopped", 0) == 0 ? 3 : 0;
}

}  // namespace dh
