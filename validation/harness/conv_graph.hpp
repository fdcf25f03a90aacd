// Convolutions through cuDNN's graph (backend) API, with the engine configuration chosen by
// benchmarking the way PyTorch 2.x does under cudnn.benchmark=True: engine configs from the
// heuristics (mode INSTANT, then FALLBACK), those that finalize and fit the workspace, at most
// `max_plans` of them (PyTorch's torch.backends.cudnn.benchmark_limit, default 10), each timed,
// the fastest kept.
#pragma once

#include <cudnn.h>

#include <functional>
#include <string>
#include <vector>

#include "util.hpp"

namespace dh {

struct ConvGeom {
  int N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, g, P, Q;
  // NHWC strides (PyTorch's torch.channels_last) on x, w and y instead of NCHW; the dimensions stay
  // N, C, H, W as cuDNN's graph API takes them.
  bool nhwc = false;
};

// One engine configuration the autotuner considered, in the order it was tried.
struct GraphCandidate {
  long long engine;     // global engine index
  long long workspace;  // bytes
  bool fallback;        // from the FALLBACK heuristics (else INSTANT)
  double time_s;        // best of three; negative when it failed to execute
  bool chosen;          // the one kept (an engine can appear several times with other knobs)
};

struct GraphPlanChoice {
  std::string name;       // "eng<global index>" of the chosen engine
  long long workspace;    // bytes
  int tried;              // plans benchmarked
  std::vector<GraphCandidate> candidates;  // every plan benchmarked or refused at execution
};

// Builds the pass's graph ("fwd", "bwd_data", "bwd_filter") over the given device buffers, picks the
// fastest plan and returns a closure that runs it on the handle's stream (for time_on_gpu).
// Throws NotSupported when no plan works.
std::function<void()> make_conv_graph(cudnnHandle_t h, const std::string& pass, const ConvGeom& c,
                                      cudnnDataType_t dtype, void* x, void* w, void* y, void* workspace,
                                      size_t workspace_bytes, int max_plans, cudaStream_t stream,
                                      GraphPlanChoice* choice);

// The same choice, kept as a plan that runs on any buffers of the same shapes (a variant pack is
// built per call, as cuDNN's frontend does in PyTorch). The train mode caches these by shape.
struct ConvGraphPlan {
  std::function<void(void* x, void* w, void* y, void* workspace)> run;
  GraphPlanChoice choice;
};
ConvGraphPlan make_conv_graph_plan(cudnnHandle_t h, const std::string& pass, const ConvGeom& c, cudnnDataType_t dtype,
                                   void* x, void* w, void* y, void* workspace, size_t workspace_bytes, int max_plans,
                                   cudaStream_t stream);

}  // namespace dh
