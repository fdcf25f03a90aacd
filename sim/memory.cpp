#include "sim/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/output.hpp"
#include "sim/blocks.hpp"
#include "workload/kernels.hpp"
#include "workload/model_json.hpp"

namespace dtsim {

MemorySpec parse_memory_spec(const Json& doc, const std::string& what) {
  JsonObject o(doc, what, "$");
  MemorySpec m;
  o.str("name");
  o.str_or("description", "");
  if (o.has("sources")) o.raw("sources");
  m.optimizer_state_bytes_per_param = o.number("optimizer_state_bytes_per_param", 0, 64);
  m.gradient_bucket_copy = o.boolean_or("gradient_bucket_copy", true);
  m.conv_workspace_operand_factor = o.number("conv_workspace_operand_factor", 0, 100);
  m.conv_workspace_max_bytes = o.number("conv_workspace_max_MiB", 0, 1 << 20) * 1048576.0;
  m.nccl_buffer_bytes = static_cast<double>(o.integer("nccl_channels", 0, 1024)) * o.number("nccl_buffer_MiB_per_channel", 0, 1 << 20) * 1048576.0;
  m.cuda_context_bytes = o.number("cuda_context_MiB", 0, 1 << 20) * 1048576.0;
  m.allocator_reserve_fraction = o.number("allocator_reserve_fraction", 0, 1);
  m.ddp_buckets_on_one_gpu = o.boolean_or("ddp_buckets_on_one_gpu", true);
  m.optimizer_step_temp_bytes_per_param = o.number_or("optimizer_step_temp_bytes_per_param", 0, 0, 64);
  if (o.has("adam")) {
    JsonObject adam = o.object("adam");
    m.adam_state_bytes_per_param = adam.number("state_bytes_per_param", 0, 64);
    m.adam_step_temp_bytes_per_param = adam.number("step_temp_bytes_per_param", 0, 64);
    adam.reject_unknown();
  }
  m.library_workspace_bytes = o.number_or("library_workspace_MiB", 0, 0, 1 << 20) * 1048576.0;
  m.input_batches_held = o.number_or("input_batches_held", 1, 0, 1 << 20);
  o.reject_unknown();
  return m;
}

const MemorySpec& default_memory_spec() {
  static const MemorySpec spec = [] {
    std::string path = config_dir() + "/memory/pytorch.json";
    return parse_memory_spec(load_json_file(path), path);
  }();
  return spec;
}

namespace {

bool is_16bit(Precision p) { return p == Precision::BF16 || p == Precision::FP16; }

// Activations whose backward needs the result rather than the input (PyTorch's derivatives.yaml:
// threshold_backward(grad, result) for an in-place ReLU, sigmoid_backward and tanh_backward take the
// output). ReLU6 is hardtanh, whose backward takes the input: in place (hardtanh_), autograd saves a
// copy of the input before overwriting it (measured: mobilenet_v2 b32 keeps its ReLU6 outputs' size
// once more, 805 MB against 782 MB counted, validation/data/h100-sxm/memory_phases.txt).
bool saves_output(const std::string& act) { return act == "relu" || act == "sigmoid" || act == "tanh"; }
// torchvision builds ReLU and ReLU6 with inplace=True: the result overwrites its input.
bool in_place(const std::string& act) { return act == "relu" || act == "relu6"; }

// Autocast's 16-bit copy of a conv or linear layer's parameters (weight and bias); a linear layer tied
// to an embedding reads (and casts) the embedding's weight, which its own parameters do not count.
double cast_copy_elements(const Layer& l) {
  return static_cast<double>(l.params()) + (l.tied_to >= 0 ? static_cast<double>(l.matmul_weight_elements()) : 0.0);
}

}  // namespace

// The tensors autograd saves, and when the backward pass lets each go: a saved tensor is freed once
// the backward of the earliest layer (in forward order) that saved it has run. freed_at[i] holds the
// bytes freed after layer i's backward; input_bytes is the model input's FP32 batch, which the
// training loop holds all step long (and autocast's conv/linear read through a 16-bit cast copy).
struct SavedTensors {
  std::vector<double> freed_at;
  double input_bytes = 0;
  double total = 0;  // including the input batch
};

namespace {

// The forward pass's allocations: storage[i] is the one layer i's output lives in (index L is the
// model input), first_saver[s] the earliest layer that saves allocation s for backward (-1: none).
struct Allocations {
  int L;
  std::vector<int> storage;
  std::vector<double> storage_bytes;
  std::vector<int> first_saver;
  explicit Allocations(int layers) : L(layers), storage(layers + 1), storage_bytes(layers + 1, 0.0), first_saver(layers + 1, -1) {}
  int store_of(int input) const { return input < 0 ? L : storage[input]; }
  void save(int s, int layer) {
    if (first_saver[s] < 0 || layer < first_saver[s]) first_saver[s] = layer;
  }
};

// Layer i's output: an allocation of its own, or its input's where it aliases it (flatten, an
// in-place activation whose input has no other consumer). Returns whether it aliases.
bool place_output(const Graph& g, int i, double out_bytes, Allocations& a) {
  const Layer& l = g.layers[i];
  const int in0 = l.inputs.empty() ? -1 : l.inputs[0];
  a.storage[i] = i;
  a.storage_bytes[i] = out_bytes;
  bool alias = false;
  switch (l.op) {
    case Op::Flatten:
    case Op::View:        // an imported model's reshapes: views, no kernel (workload/kernels.cpp)
    case Op::ToSequence:  // reshape and permute: views of the image
    case Op::Select:      // x[:, index]: a view that keeps the whole sequence alive where it is saved
      alias = true;
      break;
    case Op::Activation:
      alias = in_place(l.activation) && in0 >= 0 && g.layers[in0].consumers == 1;
      break;
    default:
      break;
  }
  if (alias) {
    a.storage[i] = a.store_of(in0);
    a.storage_bytes[i] = 0;
  }
  return alias;
}

// What layer i keeps for backward: the allocations it saves are marked in `a`; the bytes it saves
// that are not layer outputs (masks, indices, statistics, casts) are returned.
double saved_by_layer(const Graph& g, int i, bool alias, double n, Precision p, const std::vector<bool>& fp32, Allocations& a) {
  const Layer& l = g.layers[i];
  const int in0 = l.inputs.empty() ? -1 : l.inputs[0];
  const double in_el = n * (l.in.empty() ? 0 : l.in[0].elements());
  const double out_el = n * l.out.elements();
  const double ab = is_16bit(p) ? 2 : 4;
  double extra = 0.0;
  switch (l.op) {
    case Op::Conv2d:
    case Op::Linear:
      // Autocast casts the FP32 model input to 16 bits; the cast copy is what backward keeps.
      // So does an FP32 activation under autocast (a layernorm's output): the 16-bit cast is saved.
      if ((in0 < 0 || fp32[in0]) && is_16bit(p)) extra += in_el * 2;
      else a.save(a.store_of(in0), i);
      break;
    case Op::BatchNorm2d:
      a.save(a.store_of(in0), i);
      extra += 2.0 * l.in[0].c * 4;  // save_mean, save_invstd
      break;
    case Op::Activation:
      if (saves_output(l.activation)) a.save(a.storage[i], i);
      else if (alias) extra += out_el * ab;  // in place, backward needs the input: a saved copy
      else a.save(a.store_of(in0), i);
      break;
    case Op::MaxPool2d:
      a.save(a.store_of(in0), i);
      extra += out_el * 8;  // int64 argmax indices
      break;
    case Op::Dropout:
      extra += in_el * 1;  // bool mask
      break;
    case Op::SoftmaxCrossEntropy:
      a.storage_bytes[i] = 0;  // a scalar loss
      // the log-softmax in the logits' type, and under autocast also its FP32 copy, which nll_loss
      // (on autocast's FP32 list) keeps (a language model's: per token; workload/kernels.cpp)
      extra += in_el * (is_16bit(p) ? 2 + 4 : 4);
      break;
    case Op::Embedding:
      // The output is FP32 (the weight's type; autocast does not cast embeddings); backward keeps the ids.
      a.storage_bytes[i] = out_el * 4;
      a.save(a.store_of(in0), i);
      break;
    case Op::LayerNorm:
      // native_layer_norm saves its input, weight, bias and, per row, mean and rstd (FP32).
      a.save(a.store_of(in0), i);
      extra += 2.0 * n * l.in[0].tokens() * 4;
      break;
    case Op::Attention:
      // Flash attention saves q, k and v (views of the projections' outputs), its output o and the
      // logsumexp (FP32, one per token and head), plus an RNG seed and offset for its dropout; never
      // the T x T scores, which it recomputes in the backward pass.
      for (int in : l.inputs) a.save(a.store_of(in), i);
      a.save(a.storage[i], i);
      extra += n * l.in[0].h * l.num_heads * 4;
      break;
    case Op::PositionalEmbedding:
    case Op::ClassToken:
    case Op::ToSequence:
    case Op::Select:
      break;  // backward needs only shapes (the added positions' gradient is dY summed over the batch)
    case Op::AvgPool2d:
    case Op::AdaptiveAvgPool2d:
    case Op::Add:
    case Op::Concat:
    case Op::Flatten:
    case Op::View:
      break;  // backward needs only shapes
    default:
      // Operators this count does not know in detail keep their inputs, the safe guess.
      for (int in : l.inputs) a.save(a.store_of(in), i);
      break;
  }
  return extra;
}

}  // namespace

static SavedTensors saved_tensors(const Graph& g, int64_t batch, Precision p) {
  const int L = static_cast<int>(g.layers.size());
  const double n = static_cast<double>(batch);
  const double ab = is_16bit(p) ? 2 : 4;
  Allocations a(L);
  SavedTensors st;
  st.freed_at.assign(L, 0.0);
  a.storage[L] = L;
  // The FP32 batch the data loader put on the GPU, or a language model's int64 token ids.
  a.storage_bytes[L] = n * g.input.elements() * (g.token_input ? 8 : 4);
  st.input_bytes = a.storage_bytes[L];
  const std::vector<bool> fp32 = autocast_fp32_outputs(g, p);  // autocast's FP32 activations
  for (int i = 0; i < L; ++i) {
    const bool alias = place_output(g, i, n * g.layers[i].out.elements() * (fp32[i] ? 4 : ab), a);
    st.freed_at[i] = saved_by_layer(g, i, alias, n, p, fp32, a);
  }
  for (int i = 0; i < L; ++i) st.total += st.freed_at[i];
  for (int s = 0; s < L; ++s)
    if (a.first_saver[s] >= 0) {
      st.freed_at[a.first_saver[s]] += a.storage_bytes[s];
      st.total += a.storage_bytes[s];
    }
  if (a.first_saver[L] >= 0) st.total += a.storage_bytes[L];
  return st;
}

double saved_activation_bytes(const Graph& g, int64_t batch, Precision p) { return saved_tensors(g, batch, p).total; }

// A training loop holds the model's output until the step ends (`out = model(x); loss =
// criterion(out, y); loss.backward()`): where the graph ends in its loss, that output is the loss's
// input, a language model's logits (B x T x vocabulary), alive through the backward pass.
static double model_output_held_bytes(const Graph& g, double n, Precision p) {
  const int L = static_cast<int>(g.layers.size());
  if (L == 0 || g.layers[L - 1].op != Op::SoftmaxCrossEntropy || g.layers[L - 1].inputs[0] < 0) return 0;
  const bool fp32_logits = autocast_fp32_outputs(g, p)[g.layers[L - 1].inputs[0]];
  return n * g.layers[L - 1].in[0].elements() * (fp32_logits || !is_16bit(p) ? 4 : 2);
}

// What backward holds besides saved tensors while it runs layer l: the gradient flowing in and the one
// it produces (and autocast's 16-bit weight copy's gradient).
static double backward_flow_bytes(const Layer& l, double n, Precision p) {
  const double ab = is_16bit(p) ? 2 : 4;
  double in_el = 0;
  for (const Shape& s : l.in) in_el += s.elements();
  // The loss's backward: nll_loss's FP32 gradient of the log-probabilities, while both saved copies
  // are still alive (16-bit), or that gradient and log_softmax's gradient of the logits (FP32).
  if (l.op == Op::SoftmaxCrossEntropy) return n * in_el * (is_16bit(p) ? 4 : 8);
  return n * (l.out.elements() + in_el) * ab + (is_16bit(p) ? static_cast<double>(l.params()) * 2 : 0);
}

namespace {

// What activation checkpointing keeps (memory_fit): per block, its saved tensors and autocast copies
// (alive while its backward runs) and its input (kept from its forward to its backward).
struct Checkpointed {
  std::vector<LayerBlock> blocks;
  std::vector<int> of;
  std::vector<double> block_saved, inputs_of;
  double saved_outside = 0, copies_outside = 0, inputs = 0;
  double input_saved = 0;  // the model's input batch where a layer saves it (counted as input data)
};

Checkpointed checkpointed(const Graph& g, const SavedTensors& st, double n, Precision p) {
  Checkpointed c;
  c.blocks = layer_blocks(g);
  c.of = block_of_layers(g, c.blocks);
  c.block_saved.assign(c.blocks.size(), 0.0);
  c.inputs_of.assign(c.blocks.size(), 0.0);
  const std::vector<bool> fp32 = autocast_fp32_outputs(g, p);
  const double ab = is_16bit(p) ? 2 : 4;
  for (int i = 0; i < static_cast<int>(g.layers.size()); ++i) {
    const Layer& l = g.layers[i];
    const double copy = is_16bit(p) && (l.op == Op::Conv2d || l.op == Op::Linear) ? cast_copy_elements(l) * 2 : 0;
    if (c.of[i] >= 0) {
      c.block_saved[c.of[i]] += st.freed_at[i] + copy;
    } else {
      c.saved_outside += st.freed_at[i];
      c.copies_outside += copy;
    }
  }
  // The model's input batch, where something saves it, is in total, not in freed_at.
  double counted = 0;
  for (double f : st.freed_at) counted += f;
  c.input_saved = st.total - counted;
  for (size_t b = 0; b < c.blocks.size(); ++b) {
    const int j = c.blocks[b].first - 1;  // the block's input: the output of the layer before it
    c.inputs_of[b] = j < 0 ? 0 : n * static_cast<double>(g.layers[j].out.elements()) * (fp32[j] ? 4 : ab);
    c.inputs += c.inputs_of[b];
  }
  return c;
}

// The model's state as the layout holds it: weights, gradients and optimizer state (sharded or not),
// the gathered units, a unit's unsharded gradients, the strategy's buffers.
void hold_state(MemoryFit& m, double params, bool adam, const MemorySpec& spec, const MemoryLayout& layout) {
  m.weights_bytes = params * 4 / layout.param_shards;
  m.gradients_bytes = params * 4 / layout.grad_shards;
  m.optimizer_bytes = params * (adam ? spec.adam_state_bytes_per_param : spec.optimizer_state_bytes_per_param) / layout.optimizer_shards;
  m.gathered_bytes = layout.gathered_param_bytes;
  m.unsharded_grad_bytes = layout.unsharded_grad_bytes;
  m.comm_buffer_bytes = layout.comm_buffer_bytes;
  m.sharded = layout.param_shards > 1 || layout.grad_shards > 1 || layout.optimizer_shards > 1 || layout.gathered_param_bytes > 0 ||
              !layout.ddp_buckets;
}

// A convolution's cuDNN workspace in its backward; 0 for other layers.
double conv_workspace_bytes(const Layer& l, double n, double ab, const MemorySpec& spec) {
  if (l.op != Op::Conv2d) return 0;
  const double operands = n * (l.in[0].elements() + l.out.elements()) * ab + static_cast<double>(l.params()) * ab;
  return std::min(operands * spec.conv_workspace_operand_factor, spec.conv_workspace_max_bytes);
}

// The peak, what goes on top of it, and whether it fits.
void finish_fit(MemoryFit& m, const MemorySpec& spec, const GpuSpec& gpu) {
  m.peak_phase = m.backward_peak_bytes >= m.step_peak_bytes ? "backward" : "optimizer step";
  m.allocated_peak_bytes = std::max(m.backward_peak_bytes, m.step_peak_bytes);
  m.reserve_bytes = m.allocated_peak_bytes * spec.allocator_reserve_fraction;
  m.context_bytes = spec.cuda_context_bytes;
  m.device_bytes = m.allocated_peak_bytes + m.reserve_bytes + m.nccl_bytes + m.context_bytes;
  m.capacity_bytes = gpu.memory_bytes;
  m.fits = m.device_bytes <= m.capacity_bytes;
  const std::pair<double, const char*> parts[] = {
      {m.weights_bytes + m.weight_copies_bytes + m.gathered_bytes, "parameters"},
      {m.gradients_bytes + m.unsharded_grad_bytes, "gradients"},
      {m.optimizer_bytes, "optimizer state"},
      {m.activations_bytes, "activations"},
      {m.transient_bytes, "backward transient"},
      {m.workspace_bytes, "workspace"},
      {m.buckets_bytes + m.nccl_bytes + m.comm_buffer_bytes, "communication buffers"},
      {m.context_bytes, "CUDA context"},
      {m.input_bytes, "input data"}};
  m.largest_part = std::max_element(std::begin(parts), std::end(parts), [](auto& a, auto& b) { return a.first < b.first; })->second;
}

}  // namespace

MemoryFit memory_fit(const Graph& g, int64_t batch, Precision p, int64_t gpus, const GpuSpec& gpu, const MemorySpec& spec,
                     double input_batches_held, Optimizer optimizer, const MemoryLayout& layout) {
  const bool adam = optimizer != Optimizer::Sgd;
  MemoryFit m;
  const int L = static_cast<int>(g.layers.size());
  const double n = static_cast<double>(batch);
  const double ab = is_16bit(p) ? 2 : 4;
  const double params = static_cast<double>(g.params());
  if (input_batches_held < 0) input_batches_held = spec.input_batches_held;
  hold_state(m, params, adam, spec, layout);
  const SavedTensors st = saved_tensors(g, batch, p);
  m.activations_bytes = st.total - st.input_bytes;  // the batch itself is counted as input data
  // Input data: FP32 samples and int64 labels, for every batch the training loop keeps on the GPU.
  m.input_bytes = input_batches_held * (st.input_bytes + n * std::max<int64_t>(1, g.tokens_per_sample()) * 8);  // + int64 labels (per token)
  m.library_bytes = spec.library_workspace_bytes;
  if (layout.ddp_buckets && (gpus > 1 || spec.ddp_buckets_on_one_gpu)) m.buckets_bytes = spec.gradient_bucket_copy ? params * 4 : 0;
  if (gpus > 1) m.nccl_bytes = spec.nccl_buffer_bytes;
  // Held all step long (grads are not: zero_grad(set_to_none=True) frees them before the forward).
  const double base = m.weights_bytes + m.optimizer_bytes + m.buckets_bytes + m.input_bytes + m.library_bytes + m.comm_buffer_bytes;

  // Optimizer step: all gradients, plus foreach SGD's temporaries (weight decay: grads + wd * params
  // into a new list).
  m.step_temp_bytes = params * (adam ? spec.adam_step_temp_bytes_per_param : spec.optimizer_step_temp_bytes_per_param) / layout.optimizer_shards;
  m.step_peak_bytes = base + m.gradients_bytes + m.step_temp_bytes;

  // Forward and backward: every saved tensor is alive at the end of the forward pass; the backward
  // pass walks the layers in reverse, creating FP32 parameter gradients and freeing saved tensors
  // (and autocast's 16-bit weight copies) as it goes. At layer i it also holds the gradient flowing
  // in and the one it produces, and a convolution's cuDNN workspace.
  double live_saved = 0, copies = 0;
  for (int i = 0; i < L; ++i) {
    live_saved += st.freed_at[i];
    const Layer& l = g.layers[i];
    if (is_16bit(p) && (l.op == Op::Conv2d || l.op == Op::Linear)) copies += cast_copy_elements(l) * 2;
  }
  m.weight_copies_bytes = copies;
  // Activation checkpointing (torch.utils.checkpoint per block, sim/blocks.hpp): the forward keeps
  // only each block's input and what layers outside the blocks save; a block's saved tensors and
  // autocast copies live again while its backward runs, after its forward is recomputed.
  const Checkpointed ck = layout.activation_checkpointing ? checkpointed(g, st, n, p) : Checkpointed{};
  if (layout.activation_checkpointing) {
    live_saved = ck.saved_outside + ck.inputs;
    copies = ck.copies_outside;
    m.weight_copies_bytes = copies;
    m.activations_bytes = live_saved + ck.input_saved - st.input_bytes;
  }
  const double held_output = model_output_held_bytes(g, n, p);
  double grads = 0, peak = 0, largest_flow = 0, largest_ws = 0;
  const bool accumulating = layout.grad_accum_steps > 1;
  if (accumulating) grads = m.gradients_bytes;
  for (int i = L - 1; i >= 0; --i) {
    const Layer& l = g.layers[i];
    const double lp = static_cast<double>(l.params());
    const int b = layout.activation_checkpointing ? ck.of[i] : -1;
    if (b >= 0 && i == ck.blocks[b].last) live_saved += ck.block_saved[b];  // recomputed
    if (!accumulating) grads += lp * 4 / layout.grad_shards;
    const double flow = backward_flow_bytes(l, n, p);
    const double ws = conv_workspace_bytes(l, n, ab, spec);
    const double live = grads + live_saved + copies + flow + ws + held_output + m.gathered_bytes + m.unsharded_grad_bytes;
    if (live > peak) {
      peak = live;
      largest_flow = flow;
      largest_ws = ws;
    }
    live_saved -= st.freed_at[i];
    const double copy = is_16bit(p) && (l.op == Op::Conv2d || l.op == Op::Linear) ? cast_copy_elements(l) * 2 : 0;
    if (b >= 0) {
      live_saved -= copy;
      if (i == ck.blocks[b].first) live_saved -= ck.inputs_of[b];
    } else if (copy > 0) {
      copies -= copy;
    }
  }
  m.transient_bytes = largest_flow;
  m.output_held_bytes = held_output;
  m.workspace_bytes = largest_ws;
  m.backward_peak_bytes = base + peak;
  finish_fit(m, spec, gpu);
  return m;
}

Json memory_json(const MemoryFit& m) {
  Json j = Json{{"weights_bytes", m.weights_bytes},
              {"weight_copies_bytes", m.weight_copies_bytes},
              {"gradients_bytes", m.gradients_bytes},
              {"optimizer_state_bytes", m.optimizer_bytes},
              {"activations_bytes", m.activations_bytes},
              {"backward_transient_bytes", m.transient_bytes},
              {"model_output_held_bytes", m.output_held_bytes},
              {"workspace_bytes", m.workspace_bytes},
              {"ddp_buckets_bytes", m.buckets_bytes},
              {"input_data_bytes", m.input_bytes},
              {"library_workspace_bytes", m.library_bytes},
              {"optimizer_step_temp_bytes", m.step_temp_bytes},
              {"backward_peak_bytes", m.backward_peak_bytes},
              {"optimizer_step_peak_bytes", m.step_peak_bytes},
              {"peak_phase", m.peak_phase},
              {"nccl_buffers_bytes", m.nccl_bytes},
              {"cuda_context_bytes", m.context_bytes},
              {"allocator_reserve_bytes", m.reserve_bytes},
              {"allocated_peak_bytes", m.allocated_peak_bytes},
              {"device_bytes", m.device_bytes},
              {"gpu_memory_bytes", m.capacity_bytes},
              {"fits", m.fits},
              {"largest_part", m.largest_part}};
  if (m.sharded) {  // only where a sharded strategy holds the state, so that DDP's output keeps its fields
    j["gathered_params_bytes"] = m.gathered_bytes;
    j["unsharded_grad_bytes"] = m.unsharded_grad_bytes;
    j["strategy_buffers_bytes"] = m.comm_buffer_bytes;
  }
  return j;
}

static std::string gb(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GB", bytes / 1e9);
  return b;
}

std::string memory_summary(const MemoryFit& m) {
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100 * m.device_bytes / m.capacity_bytes);
  if (m.fits) return gb(m.device_bytes) + " of " + gb(m.capacity_bytes) + " per GPU (" + pct + "), fits";
  double part = m.largest_part == "activations" ? m.activations_bytes : 0;
  return gb(m.device_bytes) + " of " + gb(m.capacity_bytes) + " per GPU (" + pct + "): does NOT fit" +
         (part > 0 ? " (activations " + gb(part) + "; a smaller batch per GPU would)" : " (largest part: " + m.largest_part + ")");
}

}  // namespace dtsim
