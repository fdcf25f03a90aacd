// Plain CUDA kernels of the harness, for the memory-bound operations that PyTorch runs with its
// own elementwise/reduction kernels rather than cuDNN (relu, add, softmax-cross-entropy, SGD), and
// for filling and checking buffers. Launchers only; all enqueue on the given stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "util.hpp"

namespace dh {

// relu: y = max(x, 0); backward: dx = dy * (y > 0). relu6 clamps at 6 as well.
void relu_fwd(cudaStream_t s, DType t, const void* x, void* y, size_t n, bool relu6);
void relu_bwd(cudaStream_t s, DType t, const void* y, const void* dy, void* dx, size_t n, bool relu6);
// c = a + b (forward), and a += b (backward: autograd accumulating a gradient).
void add_fwd(cudaStream_t s, DType t, const void* a, const void* b, void* c, size_t n);
void add_acc(cudaStream_t s, DType t, void* a, const void* b, size_t n);
// Softmax cross-entropy on fp32 logits [rows, classes] as PyTorch does it: forward
// log_softmax (writes logp) + nll_loss (mean over rows, into *loss); backward nll_loss_backward
// fused with log_softmax_backward: dx = (exp(logp) - onehot(label)) / rows.
void softmax_ce_fwd(cudaStream_t s, const float* x, float* logp, const int* labels, float* loss,
                    int rows, int classes);
void softmax_ce_bwd(cudaStream_t s, const float* logp, const int* labels, float* dx, int rows,
                    int classes);
void fill_labels(cudaStream_t s, int* labels, int rows, int classes, uint64_t seed);
// SGD with momentum and weight decay on flat fp32 buffers: v = mu*v + (g + wd*p); p -= lr*v.
void sgd_momentum(cudaStream_t s, float* p, const float* g, float* v, size_t n, float lr, float mu,
                  float wd);
// Collective checks: fill x[i] = value(rank, i); count mismatches against the expected result.
enum class CollCheck { AllReduce, ReduceScatter, AllGather, Broadcast };
void coll_fill(cudaStream_t s, float* x, size_t n, int rank);
// Expected values: AllReduce y[i] = sum_r v(r,i); ReduceScatter on rank q: y[i] = sum_r v(r, q*n+i);
// AllGather: y[i] = v(i / n_per_rank, i % n_per_rank); Broadcast: y[i] = v(root, i).
void coll_check(cudaStream_t s, const float* y, size_t n, CollCheck kind, int rank, int nranks,
                size_t n_per_rank, int root, unsigned long long* mismatches);

}  // namespace dh
