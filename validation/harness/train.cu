// train mode: a real data-parallel training run of a zoo model (configs/models/NAME.json, the same
// file dtsim reads), one process per GPU, timed per iteration and per layer.
//
// Per iteration (PyTorch DDP semantics, see validation/README.md "train mode"):
//   [bf16: cast the fp32 master weights to a bf16 copy] [P > 1: broadcast BN running stats from rank 0]
//   forward, layer by layer (cuDNN graph-API convolutions autotuned like cudnn.benchmark, cuDNN
//   batchnorm / pooling, cuBLAS GEMMs, the harness's CUDA kernels for relu, add, dropout, concat,
//   bias, softmax-cross-entropy)
//   backward in reverse layer order; each parameter's fp32 gradient lands in its slot of one flat
//   gradient buffer laid out in forward parameter order, so a DDP bucket (parameters in reverse
//   order, first bucket 1 MiB, then --bucket-mib) is one contiguous range; when all of a bucket's
//   gradients are written (and the buckets before it launched) its ncclAllReduce (ncclAvg, in
//   place) is launched on a second stream; --no-overlap launches every bucket after the backward
//   SGD with momentum and weight decay over the flat fp32 buffers (one fused kernel) once the
//   compute stream has waited for the last all-reduce.
//
// Other schemes (the default, --allreduce flat without --average-every, is the above,
// unchanged, and writes no "strategy" field):
//   --allreduce hierarchical --group-size G: ranks in groups of G consecutive ranks (a "node" of G
//     GPUs); per bucket, on the communication stream: ncclReduceScatter (ncclAvg) inside the group,
//     ncclAllReduce (ncclAvg) of the rank's 1/G slice among the ranks of equal local index (one
//     communicator per local index, the groups' "rails"), ncclAllGather inside the group: the
//     structure dtsim's `hierarchical` strategy prices (network/impl/hierarchical.cpp);
//   --allreduce hierarchical-leader --group-size G: per bucket ncclReduce (ncclAvg) to the group's
//     first rank, ncclAllReduce (ncclAvg) of the whole bucket among the group leaders, ncclBroadcast
//     from the leader inside the group;
//   --average-every K (local SGD, periodic parameter averaging): no gradient communication; every
//     K-th step (global step count, warm-up included) after the SGD update the fp32 parameters are
//     all-reduced with ncclAvg on the compute stream (sum / P), then the batchnorm buffers are
//     broadcast from rank 0 (they are not broadcast in the other steps).
#include <cublas_v2.h>
#include <cudnn.h>
#include <nccl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sched.h>

#include "conv_graph.hpp"
#include "device_kernels.hpp"
#include "modes.hpp"
#include "provenance.hpp"
#include "train_kernels.hpp"
#include "util.hpp"

namespace dh {

namespace {

using json = nlohmann::json;

constexpr int kMaxRanks = 16;
constexpr int kMaxIters = 512;

// ------------------------------------------------------------------ errors
void cudnn_ok(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error(std::string(what) + ": " + cudnnGetErrorString(s));
}
#define TC(x) cudnn_ok((x), #x)
void cublas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string(what) + ": " + cublasGetStatusString(s));
}
#define TB(x) cublas_ok((x), #x)
void nccl_ok(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress) throw Error(std::string(what) + ": " + ncclGetErrorString(r));
}
#define TN(x) nccl_ok((x), #x)

// ------------------------------------------------------------------ the model
struct Layer {
  std::string name, op;
  std::vector<int> in;               // producer layer indices; -1 = the model's input
  long long C = 0, H = 0, W = 0;     // output, per sample (vector: H = W = 0)
  long long iC = 0, iH = 0, iW = 0;  // first input, per sample
  int K = 0, R = 1, S = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, g = 1;
  bool bias = false, ceil_mode = false;
  float p = 0.5f;
  long long w_off = -1, w_n = 0, b_off = -1, b_n = 0;  // parameter slots (floats) in the flat buffers
  int bn = -1;                                         // index among batchnorm layers
  long long elems() const { return H ? C * H * W : C; }
  long long in_elems() const { return iH ? iC * iH * iW : iC; }
};

struct Param {
  std::string name;
  long long off, n;
  int layer;
};

struct Model {
  std::string name, file;
  long long C, H, W;
  std::vector<Layer> layers;
  std::vector<Param> params;  // forward order
  long long flat = 0;         // floats in the flat parameter buffer (slots aligned to 64 floats)
  long long bn_channels = 0;
  int classes = 0;
};

std::pair<int, int> pair_of(const json& l, const char* key, int def) {
  if (!l.contains(key)) return {def, def};
  const auto& v = l.at(key);
  if (v.is_number_integer()) return {v.get<int>(), v.get<int>()};
  if (v.is_array() && v.size() == 2) return {v[0].get<int>(), v[1].get<int>()};
  throw Error(std::string("field '") + key + "' must be an integer or [h, w]");
}
long long pool_out(long long in, int k, int s, int p, bool ceil_mode) {
  long long num = in + 2 * p - (k - 1) - 1;
  long long out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

Model load_model(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read model file " + path);
  json m;
  try {
    f >> m;
  } catch (const std::exception& e) {
    throw Error(path + ": " + e.what());
  }
  Model md;
  md.file = path;
  md.name = m.value("name", path);
  md.C = m.at("input").at("channels").get<long long>();
  md.H = m.at("input").at("height").get<long long>();
  md.W = m.at("input").at("width").get<long long>();
  std::map<std::string, int> idx;
  auto add_param = [&](const std::string& n, long long cnt, int li) {
    md.params.push_back({n, md.flat, cnt, li});
    md.flat += (cnt + 63) / 64 * 64;
    return md.params.back().off;
  };
  int nbn = 0;
  for (const auto& l : m.at("layers")) {
    Layer L;
    L.name = l.at("name").get<std::string>();
    L.op = l.at("op").get<std::string>();
    std::string where = path + ": layer " + L.name;
    int li = static_cast<int>(md.layers.size());
    if (l.contains("inputs")) {
      for (const auto& i : l.at("inputs")) {
        std::string s = i.get<std::string>();
        if (s == "input") {
          L.in.push_back(-1);
          continue;
        }
        auto it = idx.find(s);
        if (it == idx.end()) throw Error(where + ": unknown input " + s);
        L.in.push_back(it->second);
      }
    } else {
      L.in.push_back(li - 1);  // -1 for the first layer: the model input
    }
    auto shape_of = [&](int j, long long& C, long long& H, long long& W) {
      if (j < 0) {
        C = md.C, H = md.H, W = md.W;
      } else {
        C = md.layers[j].C, H = md.layers[j].H, W = md.layers[j].W;
      }
    };
    shape_of(L.in[0], L.iC, L.iH, L.iW);
    L.C = L.iC, L.H = L.iH, L.W = L.iW;
    const std::string& op = L.op;
    try {
      if (op == "conv2d") {
        if (!L.iH) throw Error("conv2d on a vector");
        std::tie(L.R, L.S) = pair_of(l, "kernel", 1);
        std::tie(L.sh, L.sw) = pair_of(l, "stride", 1);
        std::tie(L.ph, L.pw) = pair_of(l, "padding", 0);
        std::tie(L.dh, L.dw) = pair_of(l, "dilation", 1);
        L.g = l.value("groups", 1);
        L.K = l.at("out_channels").get<int>();
        L.bias = l.value("bias", true);
        L.C = L.K;
        L.H = (L.iH + 2 * L.ph - L.dh * (L.R - 1) - 1) / L.sh + 1;
        L.W = (L.iW + 2 * L.pw - L.dw * (L.S - 1) - 1) / L.sw + 1;
        L.w_n = (long long)L.K * (L.iC / L.g) * L.R * L.S;
        L.w_off = add_param(L.name + ".weight", L.w_n, li);
        if (L.bias) L.b_n = L.K, L.b_off = add_param(L.name + ".bias", L.K, li);
      } else if (op == "linear") {
        int out = l.at("out_features").get<int>();
        L.bias = l.value("bias", true);
        long long inf = L.in_elems();
        L.C = out, L.H = L.W = 0;
        L.K = out;
        L.w_n = inf * out;
        L.w_off = add_param(L.name + ".weight", L.w_n, li);
        if (L.bias) L.b_n = out, L.b_off = add_param(L.name + ".bias", out, li);
      } else if (op == "batchnorm2d") {
        L.bn = nbn++;
        md.bn_channels += L.iC;
        L.w_n = L.b_n = L.iC;
        L.w_off = add_param(L.name + ".weight", L.iC, li);
        L.b_off = add_param(L.name + ".bias", L.iC, li);
      } else if (op == "relu" || op == "relu6" || op == "dropout") {
        L.p = l.value("p", 0.5f);
      } else if (op == "maxpool2d" || op == "avgpool2d") {
        std::tie(L.R, L.S) = pair_of(l, "kernel", 1);
        std::tie(L.sh, L.sw) = l.contains("stride") ? pair_of(l, "stride", 1) : std::make_pair(L.R, L.S);
        std::tie(L.ph, L.pw) = pair_of(l, "padding", 0);
        L.ceil_mode = l.value("ceil_mode", false);
        L.H = pool_out(L.iH, L.R, L.sh, L.ph, L.ceil_mode);
        L.W = pool_out(L.iW, L.S, L.sw, L.pw, L.ceil_mode);
      } else if (op == "adaptive_avgpool2d") {
        auto [oh, ow] = pair_of(l, "output", 1);
        // the equivalent fixed window (exact when the input size is a multiple of the output size)
        L.sh = std::max<long long>(1, L.iH / oh);
        L.sw = std::max<long long>(1, L.iW / ow);
        L.R = int(L.iH - (oh - 1) * L.sh);
        L.S = int(L.iW - (ow - 1) * L.sw);
        L.H = oh, L.W = ow;
      } else if (op == "add") {
        if (L.in.size() < 2) throw Error("add needs two or more inputs");
      } else if (op == "concat") {
        L.C = 0;
        for (int j : L.in) {
          long long c, h, w;
          shape_of(j, c, h, w);
          if (h != L.iH || w != L.iW) throw Error("concat of feature maps of different sizes");
          L.C += c;
        }
      } else if (op == "flatten") {
        L.C = L.in_elems(), L.H = L.W = 0;
      } else if (op == "softmax_cross_entropy") {
        md.classes = static_cast<int>(L.in_elems());
        L.C = 1, L.H = L.W = 0;
      } else {
        throw Error("op '" + op + "' is not supported by the train mode");
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + ": " + e.what());
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    idx[L.name] = li;
    md.layers.push_back(L);
  }
  if (md.layers.empty() || md.layers.back().op != "softmax_cross_entropy")
    throw Error(path + ": the last layer must be softmax_cross_entropy");
  return md;
}

// ------------------------------------------------------------------ processes
struct Shared {
  int count, generation, failed;
  int skip;
  ncclUniqueId id;
  double times[kMaxRanks][kMaxIters];
  unsigned long long hash[kMaxRanks];
  int ok[kMaxRanks];
  char gpu_json[kMaxRanks][4096];
  char err[kMaxRanks][512];
};
Shared* g_sh = nullptr;

extern "C" void train_alarm(int) {
  static const char msg[] = "dtsim-harness train: an NCCL call did not return within --timeout-s; rank exits\n";
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  _exit(124);
}
struct Watchdog {
  explicit Watchdog(double s) {
    signal(SIGALRM, train_alarm);
    alarm(static_cast<unsigned>(std::ceil(std::max(1.0, s))));
  }
  ~Watchdog() { alarm(0); }
};

void barrier(int nranks, double timeout_s) {
  Shared* sh = g_sh;
  int gen = __atomic_load_n(&sh->generation, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&sh->count, 1, __ATOMIC_ACQ_REL) == nranks) {
    __atomic_store_n(&sh->count, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&sh->generation, 1, __ATOMIC_ACQ_REL);
    return;
  }
  double t0 = wall_s();
  while (__atomic_load_n(&sh->generation, __ATOMIC_ACQUIRE) == gen) {
    if (__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE)) throw Error("another rank failed");
    if (wall_s() - t0 > timeout_s) throw Error("barrier timed out after " + sig4(timeout_s) + " s");
    sched_yield();
  }
}

// Waits for a stream, watching NCCL's asynchronous errors, the other ranks and the clock.
void wait_stream(cudaStream_t s, ncclComm_t comm, double timeout_s, const char* what) {
  double t0 = wall_s();
  for (;;) {
    cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) DH_CUDA(e);
    ncclResult_t st = ncclSuccess;
    TN(ncclCommGetAsyncError(comm, &st));
    if (st != ncclSuccess && st != ncclInProgress) throw Error(std::string(what) + ": " + ncclGetErrorString(st));
    if (__atomic_load_n(&g_sh->failed, __ATOMIC_ACQUIRE)) {
      ncclCommAbort(comm);
      throw Error(std::string(what) + ": another rank failed; communicator aborted");
    }
    if (wall_s() - t0 > timeout_s) {
      ncclCommAbort(comm);
      throw Error(std::string(what) + ": timed out after " + sig4(timeout_s) + " s; communicator aborted");
    }
    usleep(50);
  }
}

// ------------------------------------------------------------------ options
struct Opts {
  std::vector<std::string> models;  // paths
  std::vector<long long> batches;
  std::vector<std::string> maths;
  std::vector<std::string> overlaps;  // "on", "off"
  int gpus = 1;
  double bucket_mib = 25, first_bucket_mib = 1;
  int iters = 25, warmup = 5, profile_iters = 2, nbatches = 4;
  float lr = 0.01f, momentum = 0.9f, wd = 1e-4f;
  size_t ws_bytes = 4096ull << 20;  // as kernel mode; PyTorch is bounded only by free memory
  int max_plans = 10;
  double timeout_s = 120;
  bool broadcast_buffers = true;
  std::string allreduce = "flat";  // flat, hierarchical, hierarchical-leader
  int group_size = 0;              // hierarchical: ranks per group
  int average_every = 0;           // > 0: local SGD, parameters averaged every K steps
  bool plain() const { return allreduce == "flat" && average_every == 0; }
  std::string out;
  uint64_t seed = 1;
};

// ------------------------------------------------------------------ one rank's machinery
struct Rank {
  int rank = 0, nranks = 1;
  int gpus_per_node = 1;  // as NCCL sees them: all ranks, or DTSIM_EMULATE_GPUS_PER_NODE (emulated nodes)
  cudaStream_t cs = nullptr, ms = nullptr;  // compute, communication
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  void* cublas_ws = nullptr;
  void* conv_ws = nullptr;
  ncclComm_t comm = nullptr;
  ncclComm_t intra = nullptr, inter = nullptr;  // hierarchical: the group, the ranks of equal local index
  std::map<std::string, std::shared_ptr<ConvGraphPlan>> plans;  // autotuned convolutions, by shape
  double autotune_s = 0;
  int autotuned = 0, plan_hits = 0;
};

struct Bucket {
  long long lo, hi;    // float range in the flat buffer
  long long bytes;     // sum of its parameters' fp32 bytes (PyTorch's count)
  std::vector<int> params;
  int pending = 0;
};

// Profiling records: events around one layer's kernels of one pass.
struct Mark {
  int layer;
  std::string pass, kind;
  cudaEvent_t a, b;
};

class Trainer {
 public:
  Trainer(Rank& r, const Opts& o, const Model& m, int N, const std::string& math, bool overlap)
      : R(r), O(o), M(m), N(N), math(math), overlap(overlap) {
    dt = math == "bf16" ? DType::BF16 : DType::F32;
    cdt = math == "bf16" ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    esz = dtype_size(dt);
  }
  ~Trainer() {
    for (auto& d : tdescs) cudnnDestroyTensorDescriptor(d);
    for (auto& d : pdescs) cudnnDestroyPoolingDescriptor(d);
    for (auto& e : events) cudaEventDestroy(e);
    for (void* p : allocs) cudaFree(p);
  }

  void setup();
  void iteration(int it, bool profile, int slot);
  json run_and_report();

 private:
  Rank& R;
  const Opts& O;
  const Model& M;
  int N;
  std::string math;
  bool overlap;
  DType dt;
  cudnnDataType_t cdt;
  size_t esz;

  std::vector<void*> allocs;
  std::vector<cudnnTensorDescriptor_t> tdescs;
  std::vector<cudnnPoolingDescriptor_t> pdescs;
  std::vector<cudaEvent_t> events;

  std::vector<void*> y, gbuf, gptr;
  std::vector<bool> owned;
  std::vector<cudnnTensorDescriptor_t> xd, yd, bnd;  // per layer (batchnorm / pooling)
  std::vector<cudnnPoolingDescriptor_t> pd;
  std::vector<std::shared_ptr<ConvGraphPlan>> pf, pbd, pbf;
  float *P = nullptr, *G = nullptr, *V = nullptr;
  void *Pb = nullptr, *Gb = nullptr;
  float *bnbuf = nullptr;  // running mean, running var per batchnorm, flat
  std::vector<long long> bn_off;
  std::vector<float*> save_mean, save_inv;
  std::vector<void*> xin;
  std::vector<int*> labels;
  float *logits32 = nullptr, *logp = nullptr, *dlogits32 = nullptr, *losses = nullptr;
  void* scratch = nullptr;
  unsigned long long* dhash = nullptr;
  std::vector<Bucket> buckets;
  std::vector<int> param_bucket;
  int next_bucket = 0;
  int cur_it = 0;

  // per-iteration events
  struct ItEv {
    cudaEvent_t start, fwd, bwd, opt;
    std::vector<cudaEvent_t> ar0, ar1;
    cudaEvent_t avg0 = nullptr, avg1 = nullptr;  // local SGD: around the parameter all-reduce
  };
  std::vector<ItEv> itev;
  cudaEvent_t ev_end = nullptr;
  std::vector<cudaEvent_t> ready;  // per bucket, reused
  cudaEvent_t comm_done = nullptr;
  // profiling
  bool prof = false;
  std::vector<Mark> marks;
  size_t ev_pool_next = 0;
  std::vector<cudaEvent_t> ev_pool;
  double setup_s = 0;

  void* dalloc(size_t bytes) {
    void* p = nullptr;
    DH_CUDA(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
    allocs.push_back(p);
    return p;
  }
  cudaEvent_t event() {
    cudaEvent_t e;
    DH_CUDA(cudaEventCreate(&e));
    events.push_back(e);
    return e;
  }
  cudaEvent_t pool_event() {
    if (ev_pool_next == ev_pool.size()) ev_pool.push_back(event());
    return ev_pool[ev_pool_next++];
  }
  template <typename F>
  void timed(int layer, const char* pass, const char* kind, F&& f) {
    if (!prof) {
      f();
      return;
    }
    Mark mk{layer, pass, kind, pool_event(), pool_event()};
    DH_CUDA(cudaEventRecord(mk.a, R.cs));
    f();
    DH_CUDA(cudaEventRecord(mk.b, R.cs));
    marks.push_back(mk);
  }
  void* in_ptr(const Layer& L, int k = 0) { return L.in[k] < 0 ? xin[cur_it % O.nbatches] : y[L.in[k]]; }
  void* wptr(const Layer& L) {
    return dt == DType::F32 ? static_cast<void*>(P + L.w_off) : static_cast<char*>(Pb) + L.w_off * 2;
  }
  void* dwptr(const Layer& L) {
    return dt == DType::F32 ? static_cast<void*>(G + L.w_off) : static_cast<char*>(Gb) + L.w_off * 2;
  }
  size_t numel(int li) const { return size_t(N) * M.layers[li].elems(); }
  ConvGeom geom(const Layer& L) const {
    return ConvGeom{N, int(L.iC), int(L.iH), int(L.iW), L.K, L.R, L.S, L.sh, L.sw, L.ph, L.pw,
                    L.dh, L.dw, L.g, int(L.H), int(L.W)};
  }
  std::shared_ptr<ConvGraphPlan> plan(const std::string& pass, const Layer& L, void* x, void* w, void* yy) {
    ConvGeom c = geom(L);
    char key[256];
    std::snprintf(key, sizeof key, "%s %s %d %d %d %d %d %d %d %d %d %d %d %d %d %d", pass.c_str(), math.c_str(), c.N,
                  c.C, c.H, c.W, c.K, c.R, c.S, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.g);
    auto it = R.plans.find(key);
    if (it != R.plans.end()) {
      ++R.plan_hits;
      return it->second;
    }
    double t0 = wall_s();
    auto p = std::make_shared<ConvGraphPlan>(
        make_conv_graph_plan(R.cudnn, pass, c, cdt, x, w, yy, R.conv_ws, O.ws_bytes, O.max_plans, R.cs));
    R.autotune_s += wall_s() - t0;
    ++R.autotuned;
    R.plans[key] = p;
    return p;
  }

  // gradient delivery to a layer's input (autograd semantics: the first contribution is written,
  // later ones are added; a gradient passed through unchanged (add, flatten) is shared, not copied)
  template <typename F>
  void deliver_produce(int j, int layer, F&& f) {
    if (j < 0) return;
    if (!gptr[j]) {
      f(gbuf[j]);
      gptr[j] = gbuf[j];
      owned[j] = true;
    } else {
      f(scratch);
      accumulate(j, layer, scratch);
    }
  }
  void accumulate(int j, int layer, void* src) {
    timed(layer, "grad_accumulate", "add", [&] {
      if (owned[j]) {
        add_acc(R.cs, dt, gptr[j], src, numel(j));
      } else {
        add_fwd(R.cs, dt, gptr[j], src, gbuf[j], numel(j));
        gptr[j] = gbuf[j];
        owned[j] = true;
      }
    });
  }
  void deliver_alias(int j, int layer, void* g) {
    if (j < 0) return;
    if (!gptr[j]) {
      gptr[j] = g;
      owned[j] = false;
    } else {
      accumulate(j, layer, g);
    }
  }
  void param_ready(int pi) {
    int b = param_bucket[pi];
    --buckets[b].pending;
    if (overlap && !local()) launch_ready_buckets();
  }
  bool local() const { return O.average_every > 0; }
  // Every K-th step, and also the last warm-up step when the warm-up is shorter than K: the run's
  // first parameter all-reduce pays one-time costs (282 ms instead of 23 ms for resnet50 on 4 H100s)
  // that must not land in the timed steps.
  bool averaging_step(int it) const {
    return local() && ((it + 1) % O.average_every == 0 || (it == O.warmup - 1 && O.warmup < O.average_every));
  }
  void launch_bucket(int b, ItEv* ev) {
    DH_CUDA(cudaEventRecord(ready[b], R.cs));
    DH_CUDA(cudaStreamWaitEvent(R.ms, ready[b], 0));
    if (ev) DH_CUDA(cudaEventRecord(ev->ar0[b], R.ms));
    long long n = buckets[b].hi - buckets[b].lo;
    if (O.allreduce == "hierarchical") {
      const int g = O.group_size, li = R.rank % g;
      const long long chunk = n / g;  // n is a multiple of 64 floats (slots are aligned); g divides it (checked)
      float* mine = G + buckets[b].lo + li * chunk;
      TN(ncclReduceScatter(G + buckets[b].lo, mine, chunk, ncclFloat, ncclAvg, R.intra, R.ms));
      if (R.nranks > g) TN(ncclAllReduce(mine, mine, chunk, ncclFloat, ncclAvg, R.inter, R.ms));
      TN(ncclAllGather(mine, G + buckets[b].lo, chunk, ncclFloat, R.intra, R.ms));
    } else if (O.allreduce == "hierarchical-leader") {
      const int g = O.group_size;
      TN(ncclReduce(G + buckets[b].lo, G + buckets[b].lo, n, ncclFloat, ncclAvg, 0, R.intra, R.ms));
      if (R.nranks > g && R.rank % g == 0)
        TN(ncclAllReduce(G + buckets[b].lo, G + buckets[b].lo, n, ncclFloat, ncclAvg, R.inter, R.ms));
      TN(ncclBroadcast(G + buckets[b].lo, G + buckets[b].lo, n, ncclFloat, 0, R.intra, R.ms));
    } else {
      TN(ncclAllReduce(G + buckets[b].lo, G + buckets[b].lo, n, ncclFloat, ncclAvg, R.comm, R.ms));
    }
    if (ev) DH_CUDA(cudaEventRecord(ev->ar1[b], R.ms));
  }
  ItEv* cur_ev = nullptr;
  void launch_ready_buckets() {
    while (next_bucket < static_cast<int>(buckets.size()) && buckets[next_bucket].pending == 0)
      launch_bucket(next_bucket++, cur_ev);
  }
  void forward(int li);
  void backward(int li);
  void average_parameters(ItEv* ev);
};

void Trainer::setup() {
  double t0 = wall_s();
  const int L = static_cast<int>(M.layers.size());
  y.assign(L, nullptr);
  gbuf.assign(L, nullptr);
  gptr.assign(L, nullptr);
  owned.assign(L, false);
  xd.assign(L, nullptr);
  yd.assign(L, nullptr);
  bnd.assign(L, nullptr);
  pd.assign(L, nullptr);
  pf.assign(L, nullptr);
  pbd.assign(L, nullptr);
  pbf.assign(L, nullptr);
  size_t maxel = 0;
  long long in_el = M.C * M.H * M.W;
  for (int i = 0; i < L; ++i) {
    const Layer& l = M.layers[i];
    if (l.op == "softmax_cross_entropy") continue;
    maxel = std::max(maxel, numel(i));
    if (l.op == "flatten") {
      y[i] = nullptr;  // alias, set below
      continue;
    }
    y[i] = dalloc(numel(i) * esz);
    gbuf[i] = dalloc(numel(i) * esz);
  }
  for (int i = 0; i < L; ++i)
    if (M.layers[i].op == "flatten") {
      int j = M.layers[i].in[0];
      y[i] = j < 0 ? nullptr : y[j];
      gbuf[i] = j < 0 ? nullptr : gbuf[j];  // never written: flatten passes gradients through
    }
  scratch = dalloc(std::max<size_t>(maxel, size_t(N) * in_el) * esz);
  // parameters, gradients, momentum: flat fp32 (bf16 copies for autocast)
  P = static_cast<float*>(dalloc(M.flat * 4));
  G = static_cast<float*>(dalloc(M.flat * 4));
  V = static_cast<float*>(dalloc(M.flat * 4));
  DH_CUDA(cudaMemsetAsync(P, 0, M.flat * 4, R.cs));
  DH_CUDA(cudaMemsetAsync(G, 0, M.flat * 4, R.cs));
  DH_CUDA(cudaMemsetAsync(V, 0, M.flat * 4, R.cs));
  if (dt == DType::BF16) {
    Pb = dalloc(M.flat * 2);
    Gb = dalloc(M.flat * 2);
  }
  // init (same seed on every rank, as DDP's broadcast from rank 0 at construction): convolution
  // weights He-uniform over fan-in (variance 2/fan_in), linear weights U(+-0.0173) (variance 1e-4,
  // torchvision VGG's N(0, 0.01)), biases 0, batchnorm weight 1 and bias 0
  for (size_t pi = 0; pi < M.params.size(); ++pi) {
    const Param& p = M.params[pi];
    const Layer& l = M.layers[p.layer];
    bool is_w = p.off == l.w_off;
    if (l.op == "batchnorm2d") {
      if (is_w) fill_uniform(R.cs, P + p.off, p.n, DType::F32, 1, 1.f, 1.f);
      continue;
    }
    if (!is_w) continue;
    double fan_in = double(l.iC / l.g) * l.R * l.S;
    float b = l.op == "linear" ? 0.0173f : float(std::sqrt(6.0 / fan_in));
    fill_uniform(R.cs, P + p.off, p.n, DType::F32, O.seed * 1000003 + pi, -b, b);
  }
  // batchnorm buffers (running mean / var, one flat buffer: DDP broadcasts it) and saved statistics
  bnbuf = static_cast<float*>(dalloc(std::max<long long>(1, M.bn_channels * 2) * 4));
  bn_off.assign(L, 0);
  save_mean.assign(L, nullptr);
  save_inv.assign(L, nullptr);
  long long bo = 0;
  for (int i = 0; i < L; ++i) {
    const Layer& l = M.layers[i];
    if (l.op != "batchnorm2d") continue;
    bn_off[i] = bo;
    fill_uniform(R.cs, bnbuf + bo, l.iC, DType::F32, 1, 0.f, 0.f);
    fill_uniform(R.cs, bnbuf + bo + l.iC, l.iC, DType::F32, 1, 1.f, 1.f);
    bo += 2 * l.iC;
    save_mean[i] = static_cast<float*>(dalloc(l.iC * 4));
    save_inv[i] = static_cast<float*>(dalloc(l.iC * 4));
  }
  // data: --nbatches batches per rank, different on each rank, label a function of the input
  for (int b = 0; b < O.nbatches; ++b) {
    xin.push_back(dalloc(size_t(N) * in_el * esz));
    labels.push_back(static_cast<int*>(dalloc(size_t(N) * 4)));
    make_batch(R.cs, dt, xin.back(), labels.back(), N, in_el, M.classes,
               O.seed * 7919 + uint64_t(R.rank) * 104729 + b * 15485863ULL, 1.0f);
  }
  logits32 = static_cast<float*>(dalloc(size_t(N) * M.classes * 4));
  logp = static_cast<float*>(dalloc(size_t(N) * M.classes * 4));
  dlogits32 = static_cast<float*>(dalloc(size_t(N) * M.classes * 4));
  losses = static_cast<float*>(dalloc(kMaxIters * 4));
  dhash = static_cast<unsigned long long*>(dalloc(8));
  if (dt == DType::BF16) cast_f32_to_bf16(R.cs, P, Pb, M.flat);
  DH_CUDA(cudaStreamSynchronize(R.cs));

  // descriptors and autotuned convolutions
  auto tdesc = [&](long long c, long long h, long long w) {
    cudnnTensorDescriptor_t d;
    TC(cudnnCreateTensorDescriptor(&d));
    tdescs.push_back(d);
    TC(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, cdt, N, int(c), int(h), int(w)));
    return d;
  };
  for (int i = 0; i < L; ++i) {
    const Layer& l = M.layers[i];
    if (l.op == "conv2d") {
      void* x = in_ptr(l);
      pf[i] = plan("fwd", l, x, wptr(l), y[i]);
      if (l.in[0] >= 0) pbd[i] = plan("bwd_data", l, gbuf[l.in[0]], wptr(l), gbuf[i]);
      pbf[i] = plan("bwd_filter", l, x, dwptr(l), gbuf[i]);
    } else if (l.op == "batchnorm2d") {
      xd[i] = tdesc(l.iC, l.iH, l.iW);
      cudnnTensorDescriptor_t b;
      TC(cudnnCreateTensorDescriptor(&b));
      tdescs.push_back(b);
      TC(cudnnDeriveBNTensorDescriptor(b, xd[i], CUDNN_BATCHNORM_SPATIAL));
      bnd[i] = b;
    } else if (l.op == "maxpool2d" || l.op == "avgpool2d" || l.op == "adaptive_avgpool2d") {
      xd[i] = tdesc(l.iC, l.iH, l.iW);
      yd[i] = tdesc(l.C, l.H, l.W);
      cudnnPoolingDescriptor_t p;
      TC(cudnnCreatePoolingDescriptor(&p));
      pdescs.push_back(p);
      TC(cudnnSetPooling2dDescriptor(
          p, l.op == "maxpool2d" ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
          CUDNN_NOT_PROPAGATE_NAN, l.R, l.S, l.ph, l.pw, l.sh, l.sw));
      int n, c, h, w;
      TC(cudnnGetPooling2dForwardOutputDim(p, xd[i], &n, &c, &h, &w));
      if (h != l.H || w != l.W)
        throw NotSupported(l.name + ": cuDNN pooling gives " + std::to_string(h) + "x" + std::to_string(w) +
                           ", the model needs " + std::to_string(l.H) + "x" + std::to_string(l.W) +
                           " (ceil_mode / adaptive window not expressible)");
      pd[i] = p;
    }
  }
  // DDP buckets: parameters in reverse order, the first bucket closes at first_bucket bytes, the
  // others at bucket bytes (torch.distributed's compute_bucket_assignment_by_size)
  param_bucket.assign(M.params.size(), -1);
  long long cap0 = static_cast<long long>(O.first_bucket_mib * 1048576), cap = static_cast<long long>(O.bucket_mib * 1048576);
  Bucket cur{0, 0, 0, {}, 0};
  for (int pi = static_cast<int>(M.params.size()) - 1; pi >= 0; --pi) {
    const Param& p = M.params[pi];
    if (cur.params.empty()) cur.hi = p.off + (p.n + 63) / 64 * 64;
    cur.lo = p.off;
    cur.bytes += p.n * 4;
    cur.params.push_back(pi);
    param_bucket[pi] = static_cast<int>(buckets.size());
    if (cur.bytes >= (buckets.empty() ? cap0 : cap)) {
      buckets.push_back(cur);
      cur = Bucket{0, 0, 0, {}, 0};
    }
  }
  if (!cur.params.empty()) buckets.push_back(cur);
  if (O.allreduce == "hierarchical")
    for (auto& b : buckets)
      if ((b.hi - b.lo) % O.group_size)
        throw NotSupported("a bucket of " + std::to_string(b.hi - b.lo) + " floats does not split into " +
                           std::to_string(O.group_size) + " equal slices");
  for (size_t b = 0; b < buckets.size(); ++b) ready.push_back(event());
  comm_done = event();
  ev_end = event();
  DH_CUDA(cudaDeviceSynchronize());
  setup_s = wall_s() - t0;
}

void Trainer::forward(int i) {
  const Layer& l = M.layers[i];
  const std::string& op = l.op;
  float one = 1.f, zero = 0.f;
  if (op == "conv2d") {
    timed(i, "fwd", "conv2d", [&] { pf[i]->run(in_ptr(l), wptr(l), y[i], R.conv_ws); });
    if (l.bias) timed(i, "fwd_bias", "bias_add", [&] { bias_add(R.cs, dt, y[i], P + l.b_off, N, l.K, l.H * l.W); });
  } else if (op == "linear") {
    cudaDataType_t t = dt == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
    int in = int(l.in_elems()), out = l.K;
    timed(i, "fwd", "gemm", [&] {
      TB(cublasGemmEx(R.cublas, CUBLAS_OP_T, CUBLAS_OP_N, out, N, in, &one, wptr(l), t, in, in_ptr(l), t, in, &zero,
                      y[i], t, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    if (l.bias) timed(i, "fwd_bias", "bias_add", [&] { bias_add(R.cs, dt, y[i], P + l.b_off, N, out, 1); });
  } else if (op == "batchnorm2d") {
    timed(i, "fwd", "batchnorm", [&] {
      TC(cudnnBatchNormalizationForwardTraining(R.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd[i], in_ptr(l),
                                                xd[i], y[i], bnd[i], P + l.w_off, P + l.b_off, 0.1,
                                                bnbuf + bn_off[i], bnbuf + bn_off[i] + l.iC, 1e-5, save_mean[i],
                                                save_inv[i]));
    });
  } else if (op == "relu" || op == "relu6") {
    timed(i, "fwd", "activation", [&] { relu_fwd(R.cs, dt, in_ptr(l), y[i], numel(i), op == "relu6"); });
  } else if (op == "maxpool2d" || op == "avgpool2d" || op == "adaptive_avgpool2d") {
    timed(i, "fwd", "pool", [&] { TC(cudnnPoolingForward(R.cudnn, pd[i], &one, xd[i], in_ptr(l), &zero, yd[i], y[i])); });
  } else if (op == "add") {
    timed(i, "fwd", "add", [&] {
      add_fwd(R.cs, dt, in_ptr(l, 0), in_ptr(l, 1), y[i], numel(i));
      for (size_t k = 2; k < l.in.size(); ++k) add_acc(R.cs, dt, y[i], in_ptr(l, int(k)), numel(i));
    });
  } else if (op == "concat") {
    timed(i, "fwd", "concat", [&] {
      int off = 0;
      for (size_t k = 0; k < l.in.size(); ++k) {
        int c = l.in[k] < 0 ? int(M.C) : int(M.layers[l.in[k]].C);
        concat_slice(R.cs, dt, in_ptr(l, int(k)), y[i], N, c, int(l.C), off, l.H * l.W, true, false);
        off += c;
      }
    });
  } else if (op == "dropout") {
    timed(i, "fwd", "dropout", [&] {
      dropout_apply(R.cs, dt, in_ptr(l), y[i], numel(i), l.p, O.seed * 31 + uint64_t(cur_it) * 1000 + i + R.rank * 7);
    });
  } else if (op == "flatten") {
  } else if (op == "softmax_cross_entropy") {
    float* logits = static_cast<float*>(in_ptr(l));
    if (dt == DType::BF16) {
      timed(i, "fwd_cast", "cast", [&] { cast_bf16_to_f32(R.cs, in_ptr(l), logits32, size_t(N) * M.classes); });
      logits = logits32;
    }
    timed(i, "fwd", "softmax_ce", [&] {
      softmax_ce_fwd(R.cs, logits, logp, labels[cur_it % O.nbatches], losses + (cur_it % kMaxIters), N, M.classes);
    });
  }
}

void Trainer::backward(int i) {
  const Layer& l = M.layers[i];
  const std::string& op = l.op;
  float one = 1.f, zero = 0.f;
  if (op == "softmax_cross_entropy") {
    timed(i, "bwd", "softmax_ce", [&] { softmax_ce_bwd(R.cs, logp, labels[cur_it % O.nbatches], dlogits32, N, M.classes); });
    int j = l.in[0];
    if (dt == DType::F32)
      deliver_alias(j, i, dlogits32);
    else
      deliver_produce(j, i, [&](void* dst) {
        timed(i, "bwd_cast", "cast", [&] { cast_f32_to_bf16(R.cs, dlogits32, dst, size_t(N) * M.classes); });
      });
    return;
  }
  void* g = gptr[i];
  if (!g && op != "flatten") return;  // output unused: nothing flows back
  int j = l.in[0];
  auto weight_grads_done = [&] {
    if (dt == DType::BF16)
      timed(i, "bwd_cast", "cast", [&] {
        cast_bf16_to_f32(R.cs, static_cast<char*>(Gb) + l.w_off * 2, G + l.w_off, l.w_n);
      });
    for (size_t pi = 0; pi < M.params.size(); ++pi)
      if (M.params[pi].layer == i) param_ready(static_cast<int>(pi));
  };
  if (op == "conv2d") {
    if (j >= 0)
      deliver_produce(j, i, [&](void* dst) {
        timed(i, "bwd_data", "conv2d", [&] { pbd[i]->run(dst, wptr(l), g, R.conv_ws); });
      });
    timed(i, "bwd_filter", "conv2d", [&] { pbf[i]->run(in_ptr(l), dwptr(l), g, R.conv_ws); });
    if (l.bias)
      timed(i, "bwd_bias", "bias_grad", [&] { bias_grad(R.cs, dt, g, G + l.b_off, N, l.K, l.H * l.W); });
    weight_grads_done();
  } else if (op == "linear") {
    cudaDataType_t t = dt == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
    int in = int(l.in_elems()), out = l.K;
    if (j >= 0)
      deliver_produce(j, i, [&](void* dst) {
        timed(i, "bwd_data", "gemm", [&] {
          TB(cublasGemmEx(R.cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, N, out, &one, wptr(l), t, in, g, t, out, &zero, dst,
                          t, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        });
      });
    timed(i, "bwd_weight", "gemm", [&] {
      TB(cublasGemmEx(R.cublas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, N, &one, in_ptr(l), t, in, g, t, out, &zero,
                      dwptr(l), t, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    if (l.bias) timed(i, "bwd_bias", "bias_grad", [&] { bias_grad(R.cs, dt, g, G + l.b_off, N, out, 1); });
    weight_grads_done();
  } else if (op == "batchnorm2d") {
    deliver_produce(j, i, [&](void* dst) {
      timed(i, "bwd", "batchnorm", [&] {
        TC(cudnnBatchNormalizationBackward(R.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, xd[i],
                                           in_ptr(l), xd[i], g, xd[i], dst, bnd[i], P + l.w_off, G + l.w_off,
                                           G + l.b_off, 1e-5, save_mean[i], save_inv[i]));
      });
    });
    for (size_t pi = 0; pi < M.params.size(); ++pi)
      if (M.params[pi].layer == i) param_ready(static_cast<int>(pi));
  } else if (op == "relu" || op == "relu6") {
    deliver_produce(j, i, [&](void* dst) {
      timed(i, "bwd", "activation", [&] { relu_bwd(R.cs, dt, y[i], g, dst, numel(i), op == "relu6"); });
    });
  } else if (op == "maxpool2d" || op == "avgpool2d" || op == "adaptive_avgpool2d") {
    deliver_produce(j, i, [&](void* dst) {
      timed(i, "bwd", "pool", [&] {
        TC(cudnnPoolingBackward(R.cudnn, pd[i], &one, yd[i], y[i], yd[i], g, xd[i], in_ptr(l), &zero, xd[i], dst));
      });
    });
  } else if (op == "add") {
    for (int k : l.in) deliver_alias(k, i, g);
  } else if (op == "concat") {
    int off = 0;
    for (size_t k = 0; k < l.in.size(); ++k) {
      int jj = l.in[k];
      int c = jj < 0 ? int(M.C) : int(M.layers[jj].C);
      deliver_produce(jj, i, [&](void* dst) {
        timed(i, "bwd", "concat", [&] { concat_slice(R.cs, dt, dst, g, N, c, int(l.C), off, l.H * l.W, false, false); });
      });
      off += c;
    }
  } else if (op == "dropout") {
    deliver_produce(j, i, [&](void* dst) {
      timed(i, "bwd", "dropout", [&] {
        dropout_apply(R.cs, dt, g, dst, numel(i), l.p, O.seed * 31 + uint64_t(cur_it) * 1000 + i + R.rank * 7);
      });
    });
  } else if (op == "flatten") {
    if (g) deliver_alias(j, i, g);
  }
}

void Trainer::iteration(int it, bool profile, int slot) {
  cur_it = it;
  prof = profile;
  ItEv* ev = slot >= 0 ? &itev[slot] : nullptr;
  cur_ev = ev;
  if (profile) {
    marks.clear();
    ev_pool_next = 0;
    launch_spin(R.cs, 0.03);  // the host enqueues the whole iteration while the GPU waits: kernel times, not launch gaps
  }
  if (ev) DH_CUDA(cudaEventRecord(ev->start, R.cs));
  if (dt == DType::BF16) timed(-1, "cast_weights", "cast", [&] { cast_f32_to_bf16(R.cs, P, Pb, M.flat); });
  if (R.nranks > 1 && O.broadcast_buffers && M.bn_channels && !local())
    timed(-1, "broadcast_buffers", "broadcast", [&] {
      TN(ncclBroadcast(bnbuf, bnbuf, M.bn_channels * 2, ncclFloat, 0, R.comm, R.cs));
    });
  const int L = static_cast<int>(M.layers.size());
  for (int i = 0; i < L; ++i) forward(i);
  if (ev) DH_CUDA(cudaEventRecord(ev->fwd, R.cs));
  std::fill(gptr.begin(), gptr.end(), nullptr);
  std::fill(owned.begin(), owned.end(), false);
  for (auto& b : buckets) b.pending = static_cast<int>(b.params.size());
  next_bucket = 0;
  for (int i = L - 1; i >= 0; --i) backward(i);
  if (ev) DH_CUDA(cudaEventRecord(ev->bwd, R.cs));
  if (!local()) {
    launch_ready_buckets();  // no-overlap: all of them now; overlap: none left
    if (next_bucket != static_cast<int>(buckets.size())) throw Error("internal: a bucket's gradients were never produced");
    DH_CUDA(cudaEventRecord(comm_done, R.ms));
    DH_CUDA(cudaStreamWaitEvent(R.cs, comm_done, 0));
  }
  if (ev) DH_CUDA(cudaEventRecord(ev->opt, R.cs));
  timed(-1, "update", "sgd_update", [&] { sgd_momentum(R.cs, P, G, V, M.flat, O.lr, O.momentum, O.wd); });
  if (averaging_step(it) && R.nranks > 1) average_parameters(ev);
}

void Trainer::average_parameters(ItEv* ev) {
  if (ev) DH_CUDA(cudaEventRecord(ev->avg0, R.cs));
  TN(ncclAllReduce(P, P, M.flat, ncclFloat, ncclAvg, R.comm, R.cs));
  if (ev) DH_CUDA(cudaEventRecord(ev->avg1, R.cs));
  if (O.broadcast_buffers && M.bn_channels) TN(ncclBroadcast(bnbuf, bnbuf, M.bn_channels * 2, ncclFloat, 0, R.comm, R.cs));
}

double ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  DH_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms * 1e-3;
}
double r4(double x) { return std::stod(sig4(x)); }

json Trainer::run_and_report() {
  const int nb = static_cast<int>(buckets.size());
  const int nbe = local() ? 0 : nb;  // buckets with all-reduce events (local SGD: none)
  int n = std::min(O.iters, kMaxIters - O.warmup - O.profile_iters - 1);
  itev.resize(n);
  for (auto& e : itev) {
    e.start = event(), e.fwd = event(), e.bwd = event(), e.opt = event();
    for (int b = 0; b < nbe; ++b) e.ar0.push_back(event()), e.ar1.push_back(event());
    if (local()) e.avg0 = event(), e.avg1 = event();
  }
  const int first_timed = O.warmup;
  int it = 0;
  double tw = wall_s();
  for (int w = 0; w < O.warmup; ++w) iteration(it++, false, -1);
  wait_stream(R.cs, R.comm, O.timeout_s, "warm-up");
  double warm_s = wall_s() - tw;
  barrier(R.nranks, O.timeout_s);
  // timed iterations, back to back (no host synchronisation)
  double t0 = wall_s();
  for (int k = 0; k < n; ++k) iteration(it++, false, k);
  DH_CUDA(cudaEventRecord(ev_end, R.cs));
  wait_stream(R.cs, R.comm, O.timeout_s, "timed iterations");
  double wall = wall_s() - t0;
  std::vector<double> t(n), tf(n), tb(n), topt(n), ar_tot(n), ar_exp(n);
  std::vector<std::vector<double>> ar_start(nbe), ar_time(nbe);
  std::vector<double> t_avg;  // local SGD: the parameter all-reduce of each timed averaging step
  for (int k = 0; k < n; ++k) {
    cudaEvent_t next = k + 1 < n ? itev[k + 1].start : ev_end;
    t[k] = ms_between(itev[k].start, next);
    tf[k] = ms_between(itev[k].start, itev[k].fwd);
    tb[k] = ms_between(itev[k].fwd, itev[k].bwd);
    topt[k] = ms_between(itev[k].opt, next);
    double tot = 0, last_end = 0;
    if (averaging_step(first_timed + k) && R.nranks > 1) t_avg.push_back(ms_between(itev[k].avg0, itev[k].avg1));
    for (int b = 0; b < nbe; ++b) {
      double s = ms_between(itev[k].start, itev[k].ar0[b]), d = ms_between(itev[k].ar0[b], itev[k].ar1[b]);
      ar_start[b].push_back(s);
      ar_time[b].push_back(d);
      tot += d;
      last_end = std::max(last_end, s + d);
    }
    ar_tot[k] = tot;
    ar_exp[k] = std::max(0.0, last_end - ms_between(itev[k].start, itev[k].bwd));
  }
  for (int k = 0; k < n; ++k) g_sh->times[R.rank][k] = t[k];
  // profiled iterations: events around each layer's kernels
  std::map<std::pair<int, std::string>, std::vector<double>> lt, ls;
  std::map<std::pair<int, std::string>, std::string> lkind;
  std::vector<std::pair<int, std::string>> order;
  for (int k = 0; k < O.profile_iters; ++k) {
    iteration(it++, true, -1);
    wait_stream(R.cs, R.comm, O.timeout_s, "profiled iteration");
    cudaEvent_t first = marks.empty() ? nullptr : marks.front().a;
    for (auto& mk : marks) {
      auto key = std::make_pair(mk.layer, mk.pass);
      if (!lt.count(key)) order.push_back(key), lkind[key] = mk.kind;
      lt[key].push_back(ms_between(mk.a, mk.b));
      ls[key].push_back(ms_between(first, mk.a));
    }
  }
  // checks: losses, parameter hash across ranks
  std::vector<float> hl(it);
  DH_CUDA(cudaMemcpy(hl.data(), losses, it * 4, cudaMemcpyDeviceToHost));
  auto hash_params = [&] {
    hash_floats(R.cs, P, M.flat, dhash);
    unsigned long long h = 0;
    DH_CUDA(cudaMemcpyAsync(&h, dhash, 8, cudaMemcpyDeviceToHost, R.cs));
    wait_stream(R.cs, R.comm, O.timeout_s, "parameter hash");
    return h;
  };
  // local SGD: the ranks' parameters differ between averagings; if the last step did not average,
  // hash them as they are (recorded), then average once more and hash again (the check)
  bool last_averaged = !local() || averaging_step(it - 1);
  bool same_before_final = true;
  if (!last_averaged) {
    g_sh->hash[R.rank] = hash_params();
    barrier(R.nranks, O.timeout_s);
    for (int r = 1; r < R.nranks; ++r) same_before_final = same_before_final && g_sh->hash[r] == g_sh->hash[0];
    barrier(R.nranks, O.timeout_s);
    if (R.nranks > 1) average_parameters(nullptr);
  }
  g_sh->hash[R.rank] = hash_params();
  barrier(R.nranks, O.timeout_s);
  if (R.rank != 0) {
    barrier(R.nranks, O.timeout_s);
    return json();
  }
  std::vector<double> slow(n);  // the slowest rank per timed step
  for (int k = 0; k < n; ++k) {
    slow[k] = 0;
    for (int r = 0; r < R.nranks; ++r) slow[k] = std::max(slow[k], g_sh->times[r][k]);
  }
  bool same = true;
  for (int r = 1; r < R.nranks; ++r) same = same && g_sh->hash[r] == g_sh->hash[0];
  barrier(R.nranks, O.timeout_s);
  Stats s = stats_of(slow);
  json j;
  j["schema"] = "dtsim-measured-run/1";
  j["source"] = "dtsim-harness";
  j["framework"] = "harness";
  j["model"] = M.name;
  j["model_file"] = M.file;
  j["batch_per_gpu"] = N;
  j["gpus"] = R.nranks;
  j["nodes"] = (R.nranks + R.gpus_per_node - 1) / R.gpus_per_node;
  j["gpus_per_node"] = R.gpus_per_node;
  j["precision"] = math;
  j["precision_detail"] =
      math == "bf16"
          ? "autocast-like: fp32 master weights cast to a bf16 copy once per iteration (one kernel over the flat "
            "buffer); bf16 activations; convolutions (cuDNN graph API) and GEMMs (cublasGemmEx) on bf16 tensors with "
            "fp32 accumulation; batchnorm through cuDNN on bf16 tensors with fp32 parameters and statistics; logits "
            "cast to fp32 for softmax-cross-entropy; weight gradients computed in bf16 and cast to fp32 (bias and "
            "batchnorm gradients reduced in fp32 directly); fp32 gradient all-reduce and fp32 SGD"
          : "fp32 tensors; convolutions with TF32 tensor-op math allowed (cuDNN graph API, as PyTorch's default "
            "allow_tf32 for cuDNN); GEMMs strict FP32 (CUBLAS_COMPUTE_32F, default math, as PyTorch's default)";
  j["optimizer"] = {{"name", "sgd_momentum"}, {"lr", O.lr}, {"momentum", O.momentum}, {"weight_decay", O.wd},
                    {"impl", "one fused kernel over the flat fp32 parameter buffer"}};
  json bl = json::array();
  for (int b = 0; b < nb; ++b) {
    json names = json::array();
    for (int pi : buckets[b].params) names.push_back(M.params[pi].name);
    bl.push_back({{"index", b}, {"bytes", buckets[b].bytes}, {"allreduce_bytes", (buckets[b].hi - buckets[b].lo) * 4},
                  {"params", names}});
  }
  j["ddp"] = {{"bucket_bytes", static_cast<long long>(O.bucket_mib * 1048576)},
              {"first_bucket_bytes", static_cast<long long>(O.first_bucket_mib * 1048576)},
              {"overlap", overlap},
              {"broadcast_buffers", R.nranks > 1 && O.broadcast_buffers && M.bn_channels > 0},
              {"allreduce", O.plain() ? "ncclAllReduce ncclAvg fp32 in place on the bucket's slice of the flat gradient buffer "
                            "(gradients are bucket views), communication stream; a bucket launches when all its "
                            "gradients are written and the buckets before it have launched"
                            : local() ? "none per step (local SGD: see strategy)"
                                      : "three collectives per bucket (see strategy), launched as DDP launches its buckets"},
              {"parameters", [&] {
                 long long c = 0;
                 for (auto& p : M.params) c += p.n;
                 return c;
               }()},
              {"buckets", bl}};
  j["conv_api"] = "graph";
  j["conv_algorithm_selection"] =
      "cuDNN graph API, engine configs from heuristics INSTANT then FALLBACK, at most " + std::to_string(O.max_plans) +
      " that fit a " + std::to_string(O.ws_bytes >> 20) + " MiB workspace, each timed, fastest kept (as PyTorch 2.x "
      "with cudnn.benchmark=True); cached by shape";
  j["layout"] = "NCHW";
  j["iterations"] = {{"warmup", O.warmup}, {"measured", n}, {"profiled", O.profile_iters}};
  json samples = json::array();
  for (double v : slow) samples.push_back(r4(v));
  j["iteration_time_s"] = {{"median", r4(s.median)}, {"min", r4(s.min)}, {"max", r4(s.max)}, {"p10", r4(s.p10)},
                           {"p90", r4(s.p90)}, {"mean", r4(s.mean)}, {"spread", r4(s.spread())},
                           {"samples", samples}};
  j["iteration_timing"] =
      "CUDA events at each iteration's start on the compute stream, iterations enqueued back to back with no host "
      "synchronisation; iteration k = start(k+1) - start(k) (the last: to an event after its update); the slowest "
      "rank per iteration; wall-clock check: " + sig4(wall / n) + " s per iteration";
  j["throughput_samples_per_s"] = r4(double(R.nranks) * N / s.median);
  j["breakdown_s"] = {{"forward", r4(stats_of(tf).median)},
                      {"backward", r4(stats_of(tb).median)},
                      {"optimizer", r4(stats_of(topt).median)},
                      {"allreduce_total", r4(stats_of(ar_tot).median)},
                      {"allreduce_exposed", r4(stats_of(ar_exp).median)},
                      {"host_idle", nullptr},
                      {"note", "rank 0, medians over the timed iterations; forward/backward include any GPU idle time "
                               "waiting for the host; allreduce_exposed = end of the last all-reduce - end of the "
                               "backward pass; optimizer = from the wait for the last all-reduce to the next "
                               "iteration's start; host_idle not measured"}};
  json layers = json::array();
  for (auto& key : order) {
    int li = key.first;
    json e;
    e["name"] = li >= 0 ? M.layers[li].name : "(iteration)";
    e["op"] = li >= 0 ? M.layers[li].op : "";
    e["pass"] = key.second;
    e["kernel_kind"] = lkind[key];
    if (li >= 0) {
      const Layer& l = M.layers[li];
      json sh;
      const std::string& k = lkind[key];
      if (k == "conv2d")
        sh = {{"N", N}, {"C", l.iC}, {"H", l.iH}, {"W", l.iW}, {"K", l.K}, {"R", l.R}, {"S", l.S},
              {"stride_h", l.sh}, {"stride_w", l.sw}, {"pad_h", l.ph}, {"pad_w", l.pw}, {"dil_h", l.dh},
              {"dil_w", l.dw}, {"groups", l.g}, {"P", l.H}, {"Q", l.W}};
      else if (k == "gemm") {
        int in = int(l.in_elems()), out = l.K;
        int M_ = key.second == "fwd" ? out : in, N_ = key.second == "bwd_weight" ? out : N;
        int K_ = key.second == "fwd" ? in : key.second == "bwd_data" ? out : N;
        sh = {{"M", M_}, {"N", N_}, {"K", K_}, {"transA", key.second == "fwd" ? "T" : "N"},
              {"transB", key.second == "bwd_weight" ? "T" : "N"}, {"batch", N}, {"in_features", in},
              {"out_features", out}};
      } else if (k == "batchnorm")
        sh = {{"N", N}, {"C", l.iC}, {"H", l.iH}, {"W", l.iW}};
      else if (k == "pool")
        sh = {{"mode", l.op == "maxpool2d" ? "max" : "avg"}, {"N", N}, {"C", l.iC}, {"H", l.iH}, {"W", l.iW},
              {"R", l.R}, {"S", l.S}, {"stride", l.sh}, {"pad", l.ph}, {"P", l.H}, {"Q", l.W}};
      else if (k == "softmax_ce")
        sh = {{"N", N}, {"classes", M.classes}};
      else if (k == "bias_add" || k == "bias_grad")
        sh = {{"N", N}, {"C", l.K}, {"HW", l.H ? l.H * l.W : 1}};
      else if (k == "add" && key.second == "grad_accumulate")
        sh = {{"elements", (long long)N * (l.in[0] >= 0 ? M.layers[l.in[0]].elems() : M.C * M.H * M.W)}};
      else
        sh = {{"elements", (long long)N * l.elems()}};
      if (k == "activation") sh["op"] = l.op;
      e["shape"] = sh;
    } else {
      e["shape"] = key.second == "update" || key.second == "cast_weights" ? json{{"parameters", M.flat}}
                                                                            : json{{"elements", M.bn_channels * 2}};
    }
    e["time_s"] = r4(stats_of(lt[key]).median);
    e["start_s"] = r4(stats_of(ls[key]).median);
    e["calls"] = lt[key].size() / std::max(1, O.profile_iters);
    layers.push_back(e);
  }
  j["layers"] = layers;
  j["layers_note"] =
      "from " + std::to_string(O.profile_iters) + " separate profiled iterations (medians): CUDA events around each "
      "layer's kernels of each pass, a 30 ms spin kernel queued first so that the host runs ahead (GPU time, not launch "
      "gaps); start_s from the first kernel of the iteration; pass 'grad_accumulate' = adding a second gradient "
      "contribution at a fan-out point (autograd's accumulation), calls > 1 when a layer had several";
  json ars = json::array();
  for (int b = 0; b < nbe; ++b)
    ars.push_back({{"bucket", b}, {"bytes", buckets[b].bytes}, {"start_s", r4(stats_of(ar_start[b]).median)},
                   {"time_s", r4(stats_of(ar_time[b]).median)}});
  j["allreduces"] = ars;
  // the data cycle over --nbatches batches: compare the mean loss of the first and the last cycle
  int cyc = std::min(O.nbatches, it / 2);
  double lf = 0, ll = 0;
  for (int k = 0; k < cyc; ++k) lf += hl[k] / cyc, ll += hl[it - cyc + k] / cyc;
  json lossv = json::array();
  for (float v : hl) lossv.push_back(r4(v));
  char hs[32];
  std::snprintf(hs, sizeof hs, "%016llx", g_sh->hash[0]);
  j["checks"] = {{"loss_first", r4(lf)}, {"loss_last", r4(ll)}, {"loss_fell", std::isfinite(ll) && ll < lf},
                 {"losses", lossv}, {"loss_note", "loss_first / loss_last: mean loss of the first / last " + std::to_string(cyc) + " iterations (one pass over the data), rank 0"},
                 {"params_identical_across_ranks", same}, {"params_hash_rank0", hs}};
  j["dataset"] = "synthetic: " + std::to_string(O.nbatches) + " batches per rank (different on each rank), label = "
                 "hash % classes, input = U(-1,1) noise + a fixed +-1 pattern of the label";
  j["setup_s"] = r4(setup_s);
  j["warmup_wall_s"] = r4(warm_s);
  if (!O.plain()) {
    // which scheme ran, its parameters and its per-step times (the default dp run writes none of this)
    json st;
    auto stats_json = [&](const std::vector<double>& v) {
      json a = json::array();
      for (double x : v) a.push_back(r4(x));
      if (v.empty()) return json{{"steps", 0}, {"samples", a}};
      Stats q = stats_of(v);
      return json{{"steps", v.size()}, {"median", r4(q.median)}, {"min", r4(q.min)}, {"max", r4(q.max)},
                  {"p10", r4(q.p10)}, {"p90", r4(q.p90)}, {"mean", r4(q.mean)}, {"samples", a}};
    };
    if (local()) {
      const int K = O.average_every;
      std::vector<double> avg_steps, local_steps;
      for (int k = 0; k < n; ++k) (averaging_step(first_timed + k) ? avg_steps : local_steps).push_back(slow[k]);
      // mean over the whole periods among the timed steps (a period ends with its averaging step)
      double sum = 0;
      int steps = 0, periods = 0, run = 0;
      double run_sum = 0;
      for (int k = 0; k < n; ++k) {
        run_sum += slow[k], ++run;
        if (averaging_step(first_timed + k)) {
          if (run == K) sum += run_sum, steps += run, ++periods;
          run = 0, run_sum = 0;
        }
      }
      double med_avg = avg_steps.empty() ? 0 : stats_of(avg_steps).median;
      double med_loc = local_steps.empty() ? med_avg : stats_of(local_steps).median;
      st = {{"name", "local-sgd"},
            {"average_every", K},
            {"description", "local SGD: no gradient communication; every average_every-th step (counted from the first "
                            "warm-up step, plus the last warm-up step when the warm-up is shorter) ends with an ncclAllReduce (ncclAvg, fp32, in place, compute stream) of the "
                            "flat parameter buffer after the SGD update, then a broadcast of the batchnorm buffers "
                            "from rank 0; momentum buffers stay local"},
            {"parameter_allreduce_bytes", M.flat * 4},
            {"step_time_s",
             {{"averaging_steps", stats_json(avg_steps)},
              {"local_steps", stats_json(local_steps)},
              {"period_mean_s", r4(K == 1 ? med_avg : ((K - 1) * med_loc + med_avg) / K)},
              {"period_mean_note", "((K - 1) x median of the local steps + median of the averaging steps) / K: the "
                                   "mean step time over one period, from the medians (the value `dtsim validate` "
                                   "compares)"},
              {"full_periods_mean_s", periods ? json(r4(sum / steps)) : json(nullptr)},
              {"full_periods", periods}}},
            {"parameter_allreduce_s", stats_json(t_avg)},
            {"params_identical_before_final_average", same_before_final},
            {"final_average_for_check", !last_averaged},
            {"check_note", "checks.params_identical_across_ranks is taken after an averaging step: the last step's "
                           "own, or one extra averaging after the profiled steps (final_average_for_check); "
                           "params_identical_before_final_average is expected false then (ranks drift between "
                           "averagings)"}};
    } else {
      st = {{"name", O.allreduce},
            {"allreduce", O.allreduce},
            {"group_size", O.group_size},
            {"groups", R.nranks / O.group_size},
            {"description",
             O.allreduce == "hierarchical"
                 ? "per bucket on the communication stream: ncclReduceScatter (ncclAvg) inside each group of "
                   "group_size consecutive ranks, ncclAllReduce (ncclAvg) of the rank's 1/group_size slice among the "
                   "ranks of equal local index (one communicator per local index), ncclAllGather inside the group "
                   "(dtsim's `hierarchical` strategy)"
                 : "per bucket on the communication stream: ncclReduce (ncclAvg) to each group's first rank, "
                   "ncclAllReduce (ncclAvg) of the whole bucket among the group leaders, ncclBroadcast from the "
                   "leader inside the group"},
            {"step_time_s", {{"all_steps", stats_json(slow)}}}};
    }
    j["strategy"] = st;
  }
  return j;
}

// ------------------------------------------------------------------ a rank
int rank_main(int rank, int nranks, const Opts& o, const std::vector<Model>& models, const Args& a) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  const int emulated_gpus_per_node = emulate_node_of_rank(rank);
  Rank R;
  R.rank = rank;
  R.nranks = nranks;
  R.gpus_per_node = emulated_gpus_per_node > 0 ? std::min(emulated_gpus_per_node, nranks) : nranks;
  DH_CUDA(cudaSetDevice(rank));
  json prov = collect_provenance(rank, a, "train");
  std::snprintf(g_sh->gpu_json[rank], sizeof g_sh->gpu_json[rank], "%s", prov["gpu"].dump().c_str());
  if (rank == 0) TN(ncclGetUniqueId(&g_sh->id));
  barrier(nranks, o.timeout_s);
  DH_CUDA(cudaStreamCreateWithFlags(&R.cs, cudaStreamNonBlocking));
  DH_CUDA(cudaStreamCreateWithFlags(&R.ms, cudaStreamNonBlocking));
  {
    Watchdog wd(o.timeout_s);
    TN(ncclCommInitRank(&R.comm, nranks, g_sh->id, rank));
    if (o.allreduce != "flat") {
      const int g = o.group_size;
      TN(ncclCommSplit(R.comm, rank / g, rank % g, &R.intra, nullptr));
      const bool in_inter = o.allreduce == "hierarchical" || rank % g == 0;
      TN(ncclCommSplit(R.comm, in_inter ? rank % g : NCCL_SPLIT_NOCOLOR, rank / g, &R.inter, nullptr));
    }
  }
  TC(cudnnCreate(&R.cudnn));
  TC(cudnnSetStream(R.cudnn, R.cs));
  TB(cublasCreate(&R.cublas));
  TB(cublasSetStream(R.cublas, R.cs));
  TB(cublasSetMathMode(R.cublas, CUBLAS_DEFAULT_MATH));
  DH_CUDA(cudaMalloc(&R.cublas_ws, 32u << 20));
  TB(cublasSetWorkspace(R.cublas, R.cublas_ws, 32u << 20));
  DH_CUDA(cudaMalloc(&R.conv_ws, o.ws_bytes));
  if (rank == 0) {
    json g = json::array();
    for (int r = 0; r < nranks; ++r) g.push_back(json::parse(g_sh->gpu_json[r]));
    prov["gpus"] = g;
  }
  int status = 0;
  for (const auto& m : models)
    for (long long N : o.batches)
      for (const auto& math : o.maths)
        for (const auto& ov : o.overlaps) {
          bool overlap = ov == "on";
          std::string tag = m.name + "_b" + std::to_string(N) + "_" + std::to_string(nranks) + "gpu_" + math +
                            (overlap ? "" : "_nooverlap") +
                            (o.allreduce == "hierarchical" ? "_hier" + std::to_string(o.group_size)
                             : o.allreduce == "hierarchical-leader" ? "_leader" + std::to_string(o.group_size)
                                                                    : "") +
                            (o.average_every > 0 ? "_avg" + std::to_string(o.average_every) : "");
          double t0 = wall_s();
          std::unique_ptr<Trainer> tr;
          std::string why;
          try {
            tr = std::make_unique<Trainer>(R, o, m, static_cast<int>(N), math, overlap);
            tr->setup();
          } catch (const NoMemory& e) {
            why = std::string("no_memory: ") + e.what();
          } catch (const NotSupported& e) {
            why = std::string("not_supported: ") + e.what();
          } catch (const CudaError& e) {
            if (e.sticky) throw;
            why = std::string("cuda_error: ") + e.what();
          } catch (const Error& e) {
            why = std::string("error: ") + e.what();
          }
          if (!why.empty()) {
            tr.reset();
            cudaGetLastError();
          }
          g_sh->ok[rank] = why.empty();
          barrier(nranks, o.timeout_s);
          bool all_ok = true;
          for (int r = 0; r < nranks; ++r) all_ok = all_ok && g_sh->ok[r];
          barrier(nranks, o.timeout_s);
          if (!all_ok) {
            tr.reset();
            if (rank == 0) {
              std::printf("%-40s skipped: %s\n", tag.c_str(), why.empty() ? "another rank could not set up" : why.c_str());
              std::fflush(stdout);
              std::ofstream f(o.out + "/skipped.txt", std::ios::app);
              f << tag << "\t" << (why.empty() ? "another rank could not set up" : why) << "\n";
            }
            continue;
          }
          json j = tr->run_and_report();
          if (rank == 0) {
            prov["gpu"]["clocks_at_end"] = gpu_clocks_now(0);
            prov["date_utc_end"] = utc_now_iso();
            j["provenance"] = prov;
            j["autotune"] = {{"plans_autotuned_so_far", R.autotuned}, {"plan_cache_hits_so_far", R.plan_hits},
                             {"autotune_s_so_far", r4(R.autotune_s)}};
            j["config_wall_s"] = r4(wall_s() - t0);
            write_json(o.out + "/" + tag + ".json", j);
            std::printf("%-40s median %9.3f ms  spread %7.3f ms  fwd %8.3f bwd %8.3f ar_exposed %7.3f  loss %.3f -> %.3f"
                        "  params_same %s  (%.1f s)\n",
                        tag.c_str(), j["iteration_time_s"]["median"].get<double>() * 1e3,
                        j["iteration_time_s"]["spread"].get<double>() * 1e3,
                        j["breakdown_s"]["forward"].get<double>() * 1e3, j["breakdown_s"]["backward"].get<double>() * 1e3,
                        j["breakdown_s"]["allreduce_exposed"].get<double>() * 1e3,
                        j["checks"]["loss_first"].get<double>(), j["checks"]["loss_last"].get<double>(),
                        j["checks"]["params_identical_across_ranks"].get<bool>() ? "yes" : "NO", wall_s() - t0);
            std::fflush(stdout);
          }
          tr.reset();
        }
  {
    Watchdog wd(o.timeout_s);
    if (R.intra) ncclCommDestroy(R.intra);
    if (R.inter) ncclCommDestroy(R.inter);
    ncclCommDestroy(R.comm);
  }
  return status;
}

int probe_devices() {
  int fds[2];
  if (pipe(fds) != 0) throw Error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    if (write(fds[1], &n, sizeof n) != sizeof n) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  int n = 0;
  if (read(fds[0], &n, sizeof n) != sizeof n) n = 0;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return n;
}

}  // namespace

int run_train(const Args& a) {
  Opts o;
  o.out = a.str("out", "");
  if (o.out.empty()) throw Error("train: --out DIR is required");
  std::string dir = a.str("models-dir", DTSIM_SOURCE_MODELS_DIR);
  for (auto& m : a.list("model", "resnet50")) {
    bool path = m.find('/') != std::string::npos || (m.size() > 5 && m.substr(m.size() - 5) == ".json");
    o.models.push_back(path ? m : dir + "/" + m + ".json");
  }
  o.batches = a.int_list("batch", "32");
  o.maths = a.list("math", "fp32");
  for (auto& m : o.maths)
    if (m != "fp32" && m != "bf16") throw Error("--math: fp32 or bf16, not '" + m + "'");
  o.overlaps = a.list("overlap", "on");
  if (a.has("no-overlap")) o.overlaps = {"off"};
  for (auto& v : o.overlaps)
    if (v != "on" && v != "off") throw Error("--overlap: on, off or on,off");
  o.gpus = static_cast<int>(a.integer("gpus", 1));
  o.bucket_mib = a.num("bucket-mib", 25);
  o.first_bucket_mib = a.num("first-bucket-mib", 1);
  o.iters = static_cast<int>(a.integer("iters", 25));
  o.warmup = static_cast<int>(a.integer("warmup", 5));
  o.profile_iters = static_cast<int>(a.integer("profile-iters", 2));
  o.nbatches = static_cast<int>(a.integer("nbatches", 4));
  o.lr = static_cast<float>(a.num("lr", 0.01));
  o.momentum = static_cast<float>(a.num("momentum", 0.9));
  o.wd = static_cast<float>(a.num("weight-decay", 1e-4));
  o.ws_bytes = static_cast<size_t>(a.integer("workspace-mib", 4096)) << 20;
  o.max_plans = static_cast<int>(a.integer("graph-max-plans", 10));
  o.timeout_s = a.num("timeout-s", 120);
  o.broadcast_buffers = !a.has("no-broadcast-buffers");
  o.seed = static_cast<uint64_t>(a.integer("seed", 1));
  o.allreduce = a.str("allreduce", "flat");
  if (o.allreduce != "flat" && o.allreduce != "hierarchical" && o.allreduce != "hierarchical-leader")
    throw Error("--allreduce: flat, hierarchical or hierarchical-leader, not '" + o.allreduce + "'");
  o.group_size = static_cast<int>(a.integer("group-size", 0));
  o.average_every = static_cast<int>(a.integer("average-every", 0));
  if (o.allreduce == "flat" && o.group_size != 0) throw Error("--group-size needs --allreduce hierarchical[-leader]");
  if (o.allreduce != "flat" && (o.group_size < 1 || o.gpus % o.group_size != 0))
    throw Error("--group-size must be >= 1 and divide --gpus (" + std::to_string(o.gpus) + ")");
  if (o.average_every < 0) throw Error("--average-every must be >= 1");
  if (o.average_every > 0 && o.allreduce != "flat")
    throw Error("--average-every (local SGD, no gradient all-reduce) and --allreduce hierarchical do not combine");
  double total_timeout = a.num("total-timeout-s", 1800);
  a.str("git-commit", "");
  auto unused = a.unused();
  if (!unused.empty()) throw Error("train: unknown option --" + unused[0]);
  if (o.iters < 20) std::fprintf(stderr, "train: note: --iters %d is below the 20 the measured runs need\n", o.iters);
  if (o.warmup < 1 || o.iters < 1 || o.profile_iters < 1 || o.nbatches < 1) throw Error("train: bad iteration counts");
  std::vector<Model> models;
  for (auto& p : o.models) models.push_back(load_model(p));  // parse errors before any GPU work

  setenv("NCCL_NVLS_ENABLE", "0", 1);
  int ndev = probe_devices();
  if (o.gpus < 1 || o.gpus > ndev || o.gpus > kMaxRanks)
    throw Error("train: --gpus " + std::to_string(o.gpus) + " but " + std::to_string(ndev) + " GPUs are visible");
  make_dirs(o.out);
  auto* sh = static_cast<Shared*>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (sh == MAP_FAILED) throw Error("mmap failed");
  std::memset(sh, 0, sizeof *sh);
  g_sh = sh;
  std::vector<pid_t> kids;
  for (int r = 0; r < o.gpus; ++r) {
    pid_t pid = fork();
    if (pid < 0) throw Error("fork failed");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a launcher killed by a timeout takes its ranks with it
      int rc = 1;
      try {
        rc = rank_main(r, o.gpus, o, models, a);
      } catch (const std::exception& e) {
        std::snprintf(sh->err[r], sizeof sh->err[r], "%s", e.what());
        __atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
        std::fprintf(stderr, "train rank %d: %s\n", r, e.what());
        rc = 1;
      }
      std::fflush(stdout);
      _exit(rc);
    }
    kids.push_back(pid);
  }
  double t0 = wall_s();
  std::vector<bool> done(o.gpus, false);
  int left = o.gpus, failed = 0;
  while (left > 0) {
    for (int r = 0; r < o.gpus; ++r) {
      if (done[r]) continue;
      int st = 0;
      if (waitpid(kids[r], &st, WNOHANG) == kids[r]) {
        done[r] = true;
        --left;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
          ++failed;
          __atomic_store_n(&sh->failed, 1, __ATOMIC_RELEASE);
        }
      }
    }
    if (left > 0 && wall_s() - t0 > total_timeout) {
      std::fprintf(stderr, "train: exceeded --total-timeout-s %.0f: killing the ranks\n", total_timeout);
      for (int r = 0; r < o.gpus; ++r)
        if (!done[r]) kill(kids[r], SIGKILL), waitpid(kids[r], nullptr, 0);
      failed = o.gpus;
      break;
    }
    usleep(20000);
  }
  munmap(sh, sizeof *sh);
  return failed ? 1 : 0;
}

}  // namespace dh
