#include "compute/compute_model.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/error.hpp"

namespace dtsim {

static bool same_kernel(const KernelDesc& a, const KernelDesc& b) {
  return a.kind == b.kind && a.pass == b.pass && a.math == b.math && a.layer == b.layer && a.shape == b.shape && a.flops == b.flops &&
         a.bytes == b.bytes && a.format == b.format && (a.variant == b.variant || std::strcmp(a.variant, b.variant) == 0);
}

void RememberingComputeModel::times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = recent_.begin(); it != recent_.end(); ++it) {
    if (it->kernels.size() != ks.size() || !std::equal(ks.begin(), ks.end(), it->kernels.begin(), same_kernel)) continue;
    out = it->times;
    if (it != recent_.begin()) {
      Entry e = std::move(*it);
      recent_.erase(it);
      recent_.push_front(std::move(e));
    }
    return;
  }
  ++misses_;
  inner_->times(ks, out);
  recent_.push_front(Entry{ks, out});
  if (recent_.size() > capacity_) recent_.pop_back();
}

namespace {
constexpr size_t kNone = static_cast<size_t>(-1);
}  // namespace

bool SamePricedKernel::operator()(const KernelDesc& a, const KernelDesc& b) const {
  return a.kind == b.kind && a.pass == b.pass && a.math == b.math && a.shape == b.shape && a.flops == b.flops && a.bytes == b.bytes &&
         a.format == b.format && (a.variant == b.variant || std::strcmp(a.variant, b.variant) == 0);
}

// The variant is left out (kernels that differ in it alone are few), and so are FLOPs and bytes,
// which follow from the shape: equal kernels still hash alike, at less cost.
size_t PricedKernelHash::operator()(const KernelDesc& k) const {
  size_t h = static_cast<size_t>(k.kind) | static_cast<size_t>(k.pass) << 8 | static_cast<size_t>(k.math) << 16 | static_cast<size_t>(k.format) << 24;
  for (int64_t v : k.shape) h = (h ^ static_cast<size_t>(v)) * 0x100000001b3ULL;
  return h;
}

std::optional<KernelDesc> half_batch_twin(const KernelDesc& k) {
  const int f = batch_shape_field(k);
  if (f < 0 || k.shape[f] < 2 || k.shape[f] % 2 != 0) return std::nullopt;
  KernelDesc twin = k;
  twin.shape[f] /= 2;
  set_cost(twin);
  return twin;
}

void batch_monotone_times(const std::vector<KernelDesc>& ks, std::vector<KernelTime>& out, const RawTimes& raw,
                          const std::function<bool(const KernelDesc&)>& ladders) {
  // The distinct kernels, ks's first, then the twins; each kernel of ks by its index there.
  std::unordered_map<KernelDesc, size_t, PricedKernelHash, SamePricedKernel> index;
  std::vector<KernelDesc> distinct;
  std::vector<size_t> twin_of;  // each distinct kernel's half-batch twin's index; kNone at a ladder's foot
  index.reserve(4 * ks.size());
  distinct.reserve(4 * ks.size());
  twin_of.reserve(4 * ks.size());
  auto add = [&](const KernelDesc& k) {  // its index, and whether it is new
    const auto [it, fresh] = index.emplace(k, distinct.size());
    if (fresh) {
      distinct.push_back(k);
      twin_of.push_back(kNone);
    }
    return std::make_pair(it->second, fresh);
  };
  std::vector<size_t> of(ks.size());
  for (size_t i = 0; i < ks.size(); ++i) of[i] = add(ks[i]).first;
  const size_t own = distinct.size();
  // Each ladder once, down from every kernel of ks that takes one. A twin met again has its ladder
  // below it already; a kernel of ks met on the way (resnet50's batch-64 kernels hold some of their
  // batch-32 twins) continues it, or is walked down later.
  for (size_t j = 0; j < own; ++j) {
    if (twin_of[j] != kNone || !ladders(distinct[j])) continue;
    for (size_t x = j; twin_of[x] == kNone;) {
      const std::optional<KernelDesc> twin = half_batch_twin(distinct[x]);
      if (!twin) break;
      const size_t y = add(*twin).first;
      twin_of[x] = y;
      x = y;
    }
  }
  std::vector<KernelTime> t;
  raw(distinct, t, own);
  // The envelope, bottom up along each ladder (memoised: ladders share their lower rungs).
  std::vector<double> env(distinct.size(), -1);
  std::vector<size_t> path;
  for (size_t i = 0; i < ks.size(); ++i) {
    path.clear();
    for (size_t x = of[i]; x != kNone && env[x] < 0; x = twin_of[x]) path.push_back(x);
    for (auto p = path.rbegin(); p != path.rend(); ++p) {
      const size_t x = *p, y = twin_of[x];
      env[x] = y != kNone ? std::max(t[x].seconds, env[y]) : t[x].seconds;
    }
  }
  out.resize(ks.size());
  for (size_t i = 0; i < ks.size(); ++i) {
    out[i] = t[of[i]];
    out[i].seconds = env[of[i]];
  }
}

std::vector<std::string> compute_model_names() { return ComputeModelRegistry::get().names(); }

std::unique_ptr<ComputeModel> make_compute_model(const std::string& name, const GpuSpec& gpu) {
  if (auto m = ComputeModelRegistry::get().make(name, gpu)) return m;
  throw InputError("--compute-model", "unknown compute model '" + name + "' (" + ComputeModelRegistry::get().joined_names() + ")");
}

}  // namespace dtsim
