#include "conv_graph.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace dh {

namespace {

void check(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  std::string msg = std::string(what) + ": " + cudnnGetErrorString(s);
  int cat = static_cast<int>(s) / 1000 * 1000;
  if (cat == 2000 || cat == 3000) throw NotSupported(msg);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw CudaError(msg + " / " + cudaGetErrorString(e), e);
  throw NotSupported(msg);
}
#define G(x) check((x), #x)

// A backend descriptor, destroyed with its owner.
struct BD {
  cudnnBackendDescriptor_t d = nullptr;
  explicit BD(cudnnBackendDescriptorType_t t) { G(cudnnBackendCreateDescriptor(t, &d)); }
  ~BD() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  BD(const BD&) = delete;
  BD& operator=(const BD&) = delete;
  void set(cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t count, const void* v) {
    G(cudnnBackendSetAttribute(d, n, t, count, v));
  }
  void finalize() { G(cudnnBackendFinalize(d)); }
};
using BDP = std::shared_ptr<BD>;

BDP tensor(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t t, bool nhwc) {
  auto d = std::make_shared<BD>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  int64_t dims[4] = {n, c, h, w}, align = 16;
  int64_t strides[4] = {c * h * w, h * w, w, 1};
  if (nhwc) {  // torch.channels_last: channels innermost
    strides[1] = 1;
    strides[2] = w * c;
    strides[3] = c;
  }
  d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t);
  d->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  d->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  d->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  d->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  d->finalize();
  return d;
}

struct Plan {
  BDP plan;
  int64_t ws = 0;
  int64_t engine = -1;
  bool fallback = false;
};

BDP make_pack(void* x, void* w, void* y, void* workspace) {
  int64_t uids[3] = {1, 2, 3};
  void* ptrs[3] = {x, w, y};
  auto vp = std::make_shared<BD>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  vp->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  vp->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  vp->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  vp->finalize();
  return vp;
}

// The chosen plan and every descriptor it refers to.
struct Picked {
  BDP plan, graph, op, conv, tx, tw, ty;
  GraphPlanChoice choice;
};

Picked pick_plan(cudnnHandle_t h, const std::string& pass, const ConvGeom& c, cudnnDataType_t dtype, void* x, void* w,
                 void* y, void* workspace, size_t workspace_bytes, int max_plans, cudaStream_t stream) {
  // uids: 1 = x (dx for bwd_data), 2 = w (dw for bwd_filter), 3 = y (dy for the backward passes)
  auto tx = tensor(1, c.N, c.C, c.H, c.W, dtype, c.nhwc);
  auto tw = tensor(2, c.K, c.C / c.g, c.R, c.S, dtype, c.nhwc);  // groups: filter channels = C / groups
  auto ty = tensor(3, c.N, c.K, c.P, c.Q, dtype, c.nhwc);
  auto conv = std::make_shared<BD>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = 2, pre[2] = {c.ph, c.pw}, post[2] = {c.ph, c.pw}, str[2] = {c.sh, c.sw}, dil[2] = {c.dh, c.dw};
    conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    conv->set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    conv->set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    conv->set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre);
    conv->set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post);
    conv->set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str);
    conv->set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
    conv->finalize();
  }
  float alpha = 1.f, beta = 0.f;
  std::shared_ptr<BD> op;
  if (pass == "fwd") {
    op = std::make_shared<BD>(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ty->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  } else if (pass == "bwd_data") {
    op = std::make_shared<BD>(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ty->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  } else {
    op = std::make_shared<BD>(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ty->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv->d);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    op->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  }
  op->finalize();
  auto graph = std::make_shared<BD>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op->d);
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  graph->finalize();

  // Candidate plans: heuristics INSTANT, then FALLBACK; keep those that finalize and fit.
  std::vector<Plan> plans;
  std::vector<int64_t> seen_engines;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_FALLBACK}) {
    if (static_cast<int>(plans.size()) >= max_plans) break;
    BD heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph->d);
    heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) continue;
    int64_t count = 0;
    if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                 nullptr) != CUDNN_STATUS_SUCCESS || count <= 0)
      continue;
    std::vector<BDP> cfgs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      cfgs.push_back(std::make_shared<BD>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(cfgs.back()->d);
    }
    int64_t got = 0;
    if (cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                 raw.data()) != CUDNN_STATUS_SUCCESS)
      continue;
    for (int64_t i = 0; i < got && static_cast<int>(plans.size()) < max_plans; ++i) {
      int64_t eng_idx = -1;
      {
        BD eng(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        int64_t n = 0;
        cudnnBackendDescriptor_t e = eng.d;
        if (cudnnBackendGetAttribute(raw[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) ==
            CUDNN_STATUS_SUCCESS)
          cudnnBackendGetAttribute(eng.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &eng_idx);
      }
      // FALLBACK repeats engines INSTANT gave; knob choices aside, skip repeats
      if (mode == CUDNN_HEUR_MODE_FALLBACK && eng_idx >= 0 &&
          std::find(seen_engines.begin(), seen_engines.end(), eng_idx) != seen_engines.end())
        continue;
      auto plan = std::make_shared<BD>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
      plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i]);
      if (cudnnBackendFinalize(plan->d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t ws = 0, n = 0;
      cudnnBackendGetAttribute(plan->d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws);
      if (ws < 0 || static_cast<size_t>(ws) > workspace_bytes) continue;
      plans.push_back({plan, ws, eng_idx, mode == CUDNN_HEUR_MODE_FALLBACK});
      seen_engines.push_back(eng_idx);
    }
  }
  if (plans.empty()) throw NotSupported("graph API: no engine configuration finalized for this convolution");

  auto pack = make_pack(x, w, y, workspace);

  // Benchmark: one warm-up and the best of three event-timed runs per plan (plans that fail are skipped).
  cudaEvent_t e0, e1;
  DH_CUDA(cudaEventCreate(&e0));
  DH_CUDA(cudaEventCreate(&e1));
  int best = -1, tried = 0;
  float best_ms = 0;
  std::vector<GraphCandidate> candidates;
  for (size_t i = 0; i < plans.size(); ++i) {
    candidates.push_back({plans[i].engine, plans[i].ws, plans[i].fallback, -1.0, false});
    if (cudnnBackendExecute(h, plans[i].plan->d, pack->d) != CUDNN_STATUS_SUCCESS) {
      cudaError_t e = cudaStreamSynchronize(stream);
      if (e != cudaSuccess) {
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        DH_CUDA(e);
      }
      continue;
    }
    ++tried;
    float ms_best = 1e30f;
    for (int r = 0; r < 3; ++r) {
      DH_CUDA(cudaEventRecord(e0, stream));
      cudnnBackendExecute(h, plans[i].plan->d, pack->d);
      DH_CUDA(cudaEventRecord(e1, stream));
      DH_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      DH_CUDA(cudaEventElapsedTime(&ms, e0, e1));
      ms_best = std::min(ms_best, ms);
    }
    candidates.back().time_s = ms_best * 1e-3;
    if (best < 0 || ms_best < best_ms) {
      best = static_cast<int>(i);
      best_ms = ms_best;
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  DH_CUDA(cudaGetLastError());
  if (best < 0) throw NotSupported("graph API: every engine configuration failed to execute");
  Picked p{plans[best].plan, graph, op, conv, tx, tw, ty, {}};
  p.choice.name = "eng" + std::to_string(plans[best].engine);
  p.choice.workspace = plans[best].ws;
  p.choice.tried = tried;
  candidates[best].chosen = true;
  p.choice.candidates = std::move(candidates);
  return p;
}

}  // namespace

std::function<void()> make_conv_graph(cudnnHandle_t h, const std::string& pass, const ConvGeom& c,
                                      cudnnDataType_t dtype, void* x, void* w, void* y, void* workspace,
                                      size_t workspace_bytes, int max_plans, cudaStream_t stream,
                                      GraphPlanChoice* choice) {
  auto p = std::make_shared<Picked>(pick_plan(h, pass, c, dtype, x, w, y, workspace, workspace_bytes, max_plans, stream));
  if (choice) *choice = p->choice;
  auto pack = make_pack(x, w, y, workspace);
  // The closure keeps every descriptor the plan refers to alive.
  return [h, p, pack] { G(cudnnBackendExecute(h, p->plan->d, pack->d)); };
}

ConvGraphPlan make_conv_graph_plan(cudnnHandle_t h, const std::string& pass, const ConvGeom& c, cudnnDataType_t dtype,
                                   void* x, void* w, void* y, void* workspace, size_t workspace_bytes, int max_plans,
                                   cudaStream_t stream) {
  auto p = std::make_shared<Picked>(pick_plan(h, pass, c, dtype, x, w, y, workspace, workspace_bytes, max_plans, stream));
  ConvGraphPlan out;
  out.choice = p->choice;
  out.run = [h, p](void* x2, void* w2, void* y2, void* ws2) {
    auto pack = make_pack(x2, w2, y2, ws2);
    G(cudnnBackendExecute(h, p->plan->d, pack->d));
  };
  return out;
}

}  // namespace dh
