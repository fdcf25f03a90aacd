#pragma once
// Lowering layers to kernels (docs/design.md §2, Kernels). Each kernel carries its shape fields,
// the math it runs in, and two lower bounds a roofline needs: FLOPs, and bytes moved with every
// input read once and every output written once.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/precision.hpp"
#include "workload/graph.hpp"

namespace dtsim {


// Eltwise: what imported models need beyond these (a per-channel multiply, a transpose, an operator
// dtsim does not know): a memory-bound kernel known only by the elements it reads and writes.
// LayerNorm, Attention (flash attention, fused) and Embedding (gather, index-add) are the
// transformers' own (docs/transformers.md); no measured predictors yet: the roofline prices them.
enum class KernelKind { Conv2d, Gemm, BatchNorm, Activation, Pool, Add, Concat, Dropout, SoftmaxCE, SgdUpdate, Eltwise, AdamUpdate,
                        LayerNorm, Attention, Embedding };
constexpr int kKernelKinds = static_cast<int>(KernelKind::Embedding) + 1;
enum class Pass { Fwd, BwdData, BwdFilter, BwdWeight, Bwd, Update };
constexpr int kPasses = static_cast<int>(Pass::Update) + 1;
// The names of kinds and passes, in the outputs and in every file and flag that names them.
const char* kind_name(KernelKind k);
const char* pass_name(Pass p);
std::optional<KernelKind> parse_kind(const std::string& name);  // nullopt for a name no kind has
std::optional<Pass> parse_pass(const std::string& name);

// The math a kernel of this kind runs in when training at precision p (PyTorch's defaults): cuDNN
// runs fp32 convolutions in TF32, cuBLAS keeps fp32 matmuls strict FP32, memory-bound kernels run on
// CUDA cores in the activations' type, and the loss and the optimizer stay FP32 under autocast.
MathMode math_mode_for(KernelKind kind, Precision p);

// Shape fields per kind, in the order of kernel_shape_fields(kind):
//   conv2d: N C H W K R S stride_h stride_w pad_h pad_w dil_h dil_w groups
//   gemm: M N K transA transB (row-major, as PyTorch sees nn.Linear)   batchnorm: N C H W
//   pool: N C H W R S stride pad P Q (P, Q: output size)   add: elements inputs
//   activation, concat, dropout: elements      softmax_ce: N classes    sgd_update: params
//   eltwise: read written (elements read from all inputs, elements written to all outputs)
//   adam_update: params (variant adam or adamw)
//   layernorm: rows features (rows = batch x tokens; normalised over the features)
//   attention: N heads T head_dim causal (causal 1: is_causal; q, k, v and o are N x heads x T x head_dim);
//     variant "dropout" when dropout runs inside the kernel (training with dropout_p > 0)
//   embedding: rows dim num_embeddings (rows = batch x tokens gathered from a num_embeddings x dim table)
constexpr int kMaxShapeFields = 14;

// The activations' memory format, in PyTorch's words: contiguous (NCHW) or channels_last (NHWC).
// cuDNN runs NHWC convolution kernels either way; under contiguous tensors it adds transposes around
// them (torch.profiler, resnet50 b128 bf16 on one H100: 6.7 ms of nchwToNhwc/nhwcToNchw kernels per
// step), and PyTorch's batchnorm, pooling and elementwise kernels differ per format.
enum class MemoryFormat { Contiguous, ChannelsLast };
const char* memory_format_name(MemoryFormat f);  // contiguous, channels_last
std::optional<MemoryFormat> parse_memory_format(const std::string& name);

// torch.optim's optimizers as dtsim prices them (their default foreach implementations): SGD with
// momentum (and weight decay), AdamW, Adam.
enum class Optimizer { Sgd, AdamW, Adam };
const char* optimizer_name(Optimizer o);  // sgd, adamw, adam
std::optional<Optimizer> parse_optimizer(const std::string& name);

// How the step is issued (docs/training-modes.md): eager PyTorch; the step captured as CUDA graphs
// (one graph launch instead of a host cost per kernel); torch.compile (Inductor fuses the chains of
// batchnorm, activation and elementwise kernels between convolutions and matmuls); both, as
// torch.compile(mode="reduce-overhead") runs it.
enum class Execution { Eager, CudaGraphs, Compile, CompileCudaGraphs };
const char* execution_name(Execution e);  // eager, cuda-graphs, compile, compile-cuda-graphs
std::optional<Execution> parse_execution(const std::string& name);
inline bool replays_graphs(Execution e) { return e == Execution::CudaGraphs || e == Execution::CompileCudaGraphs; }
inline bool inductor_compiled(Execution e) { return e == Execution::Compile || e == Execution::CompileCudaGraphs; }

// The ways of running one step beside its size and precision.
struct StepMode {
  MemoryFormat memory_format = MemoryFormat::Contiguous;
  Optimizer optimizer = Optimizer::Sgd;
  Execution execution = Execution::Eager;
  // torch.utils.checkpoint around each block (sim/blocks.hpp): its forward recomputed in the backward.
  bool activation_checkpointing = false;
};
const std::vector<const char*>& kernel_shape_fields(KernelKind k);

struct KernelDesc {
  KernelKind kind;
  Pass pass;
  MathMode math;
  int layer;  // index into Graph::layers; -1 for the optimizer's kernels
  std::array<int64_t, kMaxShapeFields> shape{};
  // pool: max or avg; activation: relu, relu6, ...; a string literal or intern_variant()'s, which live
  // as long as the program (never a pointer into a Graph or another object that may go away).
  const char* variant = "";
  double flops = 0;
  double bytes = 0;
  // The tensors' layout; only 4-D activation kernels (convolutions, batchnorm, pooling and the
  // elementwise kernels over them) are ever channels_last.
  MemoryFormat format = MemoryFormat::Contiguous;
};

// The conv2d variant of a depthwise convolution run by PyTorch's own conv_depthwise2d kernels
// (aten's use_cudnn_depthwise: cuDNN only for fp16 or channels_last tensors), not by cuDNN.
inline constexpr const char* kNativeDepthwise = "native_depthwise";

// The pool variants of a pooling with a window under torch.compile: a generated kernel of its own,
// not fused with the elementwise layers around it (FrameworkSpec::compiled_pooling prices it).
inline constexpr const char* kInductorMaxPool = "inductor_max";
inline constexpr const char* kInductorAvgPool = "inductor_avg";
bool is_compiled_pool(const KernelDesc& k);

// The batchnorm variant PyTorch runs with its own kernels (batch_norm_collect_statistics_kernel,
// batch_norm_transform_input_kernel, batch_norm_backward_kernel): bf16 on contiguous tensors. fp32 and
// fp16 go to cuDNN's (torch.profiler, mobilenet_v2 b256 on one H200), as channels_last goes to its own.
inline constexpr const char* kNativeBatchnorm = "native";
bool pytorch_runs_native_batchnorm(const KernelDesc& k);

// Whether PyTorch runs this convolution with its native depthwise kernels: groups equal to the input
// channels (more than one), contiguous tensors, math other than fp16.
bool pytorch_runs_native_depthwise(const KernelDesc& k);

// A program-lifetime copy of a variant name (thread-safe), for KernelDesc::variant.
const char* intern_variant(const std::string& name);

// The shape field that grows in proportion to the batch as the lowering builds kernels: the batch
// itself (conv2d, batchnorm, pool, softmax_ce, attention: N), the rows made of it (gemm fwd and
// bwd_data: M; gemm bwd_weight: K, its reduction over the rows; layernorm, embedding: rows), or the
// elements (activation, add, concat, dropout). -1 where no single field does: eltwise (its read and
// written counts need not both grow: a bias gradient writes one value per channel) and the optimizer
// updates (parameters only).
int batch_shape_field(const KernelDesc& k);

// Bytes per element of the tensors a kernel of this math mode reads and writes.
int element_bytes(MathMode m);

// Sets k.flops and k.bytes from its kind, pass, math and shape. The one place that knows each
// kernel's arithmetic and traffic, so that kernels lowered from models and kernels read from measured
// datasets are costed alike.
void set_cost(KernelDesc& k);

struct IterationKernels {
  std::vector<KernelDesc> forward;   // graph order
  std::vector<KernelDesc> backward;  // reverse graph order; the loss's backward first
  std::vector<KernelDesc> update;    // optimizer
  // The host waits for the GPU after issuing this many update kernels (0: never): fp16's GradScaler
  // reads its inf flag back (found_inf.item()) before it lets the optimizer step.
  size_t update_host_sync_after = 0;
  // torch.compile without CUDA graphs (Execution::Compile): the eager step's forward and backward
  // kernels, whose host costs the compiled wrapper pays (sim/schedule.cpp compiled_host_shares).
  // Empty in every other mode.
  std::vector<KernelDesc> eager_forward, eager_backward;
  int64_t batch = 0;                     // samples per GPU, as lowered
  Precision precision = Precision::FP32;  // as lowered
};

// Per layer: whether autocast (bf16/fp16) leaves its output FP32 (docs/transformers.md); all false otherwise.
std::vector<bool> autocast_fp32_outputs(const Graph& g, Precision p);

IterationKernels lower_iteration(const Graph& g, int64_t batch, Precision p, const StepMode& mode = {});

}  // namespace dtsim
