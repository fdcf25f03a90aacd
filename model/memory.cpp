#include "model/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/output.hpp"
#include "model/model_json.hpp"

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
// output).
bool saves_output(const std::string& act) { return act == "relu" || act == "relu6" || act == "sigmoid" || act == "tanh"; }
// torchvision builds ReLU and ReLU6 with inplace=True: the result overwrites its input.
bool in_place(const std::string& act) { return act == "relu" || act == "relu6"; }

}  // namespace

double saved_activation_bytes(const Graph& g, int64_t batch, Precision p) {
  const int L = static_cast<int>(g.layers.size());
  const double n = static_cast<double>(batch);
  const double ab = is_16bit(p) ? 2 : 4;
  // storage[i]: which allocation layer i's output lives in (index L is the model input).
  std::vector<int> storage(L + 1);
  std::vector<double> storage_bytes(L + 1, 0.0);
  std::vector<bool> saved(L + 1, false);
  storage[L] = L;
  storage_bytes[L] = n * g.input.elements() * 4;  // the FP32 batch the data loader put on the GPU
  saved[L] = true;                                // held by the training loop all step long
  auto store_of = [&](int input) { return input < 0 ? L : storage[input]; };
  double extra = 0;  // saved tensors that are not layer outputs: masks, indices, statistics, casts

  for (int i = 0; i < L; ++i) {
    const Layer& l = g.layers[i];
    const int in0 = l.inputs.empty() ? -1 : l.inputs[0];
    const double in_el = n * (l.in.empty() ? 0 : l.in[0].elements());
    const double out_el = n * l.out.elements();
    storage[i] = i;
    storage_bytes[i] = out_el * ab;
    bool alias = false;
    switch (l.op) {
      case Op::Flatten:
        alias = true;
        break;
      case Op::Activation:
        alias = in_place(l.activation) && in0 >= 0 && g.layers[in0].consumers == 1;
        break;
      default:
        break;
    }
    if (alias) {
      storage[i] = store_of(in0);
      storage_bytes[i] = 0;
    }
    switch (l.op) {
      case Op::Conv2d:
      case Op::Linear:
        // Autocast casts the FP32 model input to 16 bits; the cast copy is what backward keeps.
        if (in0 < 0 && is_16bit(p)) extra += in_el * 2;
        else saved[store_of(in0)] = true;
        break;
      case Op::BatchNorm2d:
        saved[store_of(in0)] = true;
        extra += 2.0 * l.in[0].c * 4;  // save_mean, save_invstd
        break;
      case Op::Activation:
        if (saves_output(l.activation)) saved[storage[i]] = true;
        else saved[store_of(in0)] = true;
        break;
      case Op::MaxPool2d:
        saved[store_of(in0)] = true;
        extra += out_el * 8;  // int64 argmax indices
        break;
      case Op::Dropout:
        extra += in_el * 1;  // bool mask
        break;
      case Op::SoftmaxCrossEntropy:
        storage_bytes[i] = 0;  // a scalar loss
        extra += in_el * 4;    // log-softmax, FP32 under autocast too
        break;
      case Op::AvgPool2d:
      case Op::AdaptiveAvgPool2d:
      case Op::Add:
      case Op::Concat:
      case Op::Flatten:
        break;  // backward needs only shapes
      default:
        // Operators this count does not know in detail keep their inputs, the safe guess.
        for (int in : l.inputs) saved[store_of(in)] = true;
        break;
    }
  }
  double total = extra;
  for (int s = 0; s <= L; ++s)
    if (saved[s]) total += storage_bytes[s];
  return total;
}

MemoryFit memory_fit(const Graph& g, int64_t batch, Precision p, int64_t gpus, const GpuSpec& gpu, const MemorySpec& spec) {
  MemoryFit m;
  const double n = static_cast<double>(batch);
  const double ab = is_16bit(p) ? 2 : 4;
  const double params = static_cast<double>(g.params());
  m.weights_bytes = params * 4;
  m.gradients_bytes = params * 4;
  m.optimizer_bytes = params * spec.optimizer_state_bytes_per_param;
  m.activations_bytes = saved_activation_bytes(g, batch, p);
  double largest_out = 0, workspace = 0, matmul_params = 0;
  for (const Layer& l : g.layers) {
    largest_out = std::max(largest_out, n * l.out.elements() * ab);
    if (l.op == Op::Conv2d || l.op == Op::Linear) matmul_params += static_cast<double>(l.params());
    if (l.op == Op::Conv2d) {
      double operands = n * (l.in[0].elements() + l.out.elements()) * ab + l.params() * ab;
      workspace = std::max(workspace, operands * spec.conv_workspace_operand_factor);
    }
  }
  m.weight_copies_bytes = is_16bit(p) ? matmul_params * 2 : 0;
  m.transient_bytes = 2 * largest_out;
  m.workspace_bytes = std::min(workspace, spec.conv_workspace_max_bytes);
  if (gpus > 1) {
    m.buckets_bytes = spec.gradient_bucket_copy ? params * 4 : 0;
    m.nccl_bytes = spec.nccl_buffer_bytes;
  }
  m.allocated_peak_bytes = m.weights_bytes + m.weight_copies_bytes + m.gradients_bytes + m.optimizer_bytes + m.activations_bytes +
                           m.transient_bytes + m.workspace_bytes + m.buckets_bytes;
  m.reserve_bytes = m.allocated_peak_bytes * spec.allocator_reserve_fraction;
  m.context_bytes = spec.cuda_context_bytes;
  m.device_bytes = m.allocated_peak_bytes + m.reserve_bytes + m.nccl_bytes + m.context_bytes;
  m.capacity_bytes = gpu.memory_bytes;
  m.fits = m.device_bytes <= m.capacity_bytes;
  const std::pair<double, const char*> parts[] = {
      {m.weights_bytes + m.weight_copies_bytes, "parameters"}, {m.gradients_bytes, "gradients"}, {m.optimizer_bytes, "optimizer state"},
      {m.activations_bytes, "activations"},  {m.transient_bytes, "backward transient"},        {m.workspace_bytes, "workspace"},
      {m.buckets_bytes + m.nccl_bytes, "communication buffers"}, {m.context_bytes, "CUDA context"}};
  m.largest_part = std::max_element(std::begin(parts), std::end(parts), [](auto& a, auto& b) { return a.first < b.first; })->second;
  return m;
}

Json memory_json(const MemoryFit& m) {
  return Json{{"weights_bytes", m.weights_bytes},
              {"weight_copies_bytes", m.weight_copies_bytes},
              {"gradients_bytes", m.gradients_bytes},
              {"optimizer_state_bytes", m.optimizer_bytes},
              {"activations_bytes", m.activations_bytes},
              {"backward_transient_bytes", m.transient_bytes},
              {"workspace_bytes", m.workspace_bytes},
              {"ddp_buckets_bytes", m.buckets_bytes},
              {"nccl_buffers_bytes", m.nccl_bytes},
              {"cuda_context_bytes", m.context_bytes},
              {"allocator_reserve_bytes", m.reserve_bytes},
              {"allocated_peak_bytes", m.allocated_peak_bytes},
              {"device_bytes", m.device_bytes},
              {"gpu_memory_bytes", m.capacity_bytes},
              {"fits", m.fits},
              {"largest_part", m.largest_part}};
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
