// dtsim-train-predictors: trains one MLP per (kernel kind, pass, math mode) on measured kernel times,
// on the CPU with LibTorch, and writes a predictor folder (compute/impl/mlp/mlp.hpp). The only program
// of the project that includes torch; `dtsim train-predictors` hands over to it.
//
// Method: features as in compute/impl/mlp/features.cpp, standardised; target log(seconds), standardised;
// shapes split into training and held-out parts by their hash before anything is fitted; Adam with
// a cosine learning-rate decay; one thread and a fixed seed, so a run is repeatable. The held-out
// error is measured through the same Eigen inference that predictions use.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/args.hpp"
#include "core/output.hpp"
#include "compute/impl/mlp/dataset.hpp"
#include "compute/impl/mlp/features.hpp"
#include "compute/impl/mlp/mlp.hpp"
#include "compute/impl/mlp/mlp_model.hpp"
#include "compute/impl/roofline/roofline_model.hpp"
#include "workload/model_json.hpp"
#include "hardware/gpu_spec.hpp"

using namespace dtsim;
using namespace dtsim::mlp;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string data, out, gpu;
  int64_t seed = 1;
  int steps = 3000;
  std::string hidden = "64,64,64";
  int min_rows = 24;
  double weight_decay = 1e-4;
  double huber_beta = 0.1;  // in standard deviations of the target
  std::string dump;  // CSV of every row's measured and predicted time, for diagnosis
  std::string files;  // comma-separated CSV names to train on; empty: every CSV of the folder
  // Held-out targets: a predictor that misses its target is reported and not written, so
  // that such kernels fall back to the roofline rather than to a predictor known to be worse.
  double target_matmul = 0.10, target_vector = 0.15;
  // Write a predictor that misses its target anyway when it beats the roofline, its fallback, on the
  // same held-out shapes; the manifest marks it (heldout.meets_target false, heldout.roofline_mape).
  bool keep_below_target = false;
  bool evaluate = false;  // no training: score the shipped predictors on --data measured on --gpu
  // Model selection without the held-out shapes: train on the training shapes whose hash is 2-4 mod 5,
  // report the error on those with 1 mod 5 (the validation part); held-out rows are not read.
  bool validate = false;
  std::string loss = "huber";  // huber or l1, in log space
  double lr = 3e-3;
  int ensemble = 1;  // MLPs per predictor (different seeds), packed into one block-diagonal MLP
  std::string drop_features;  // comma-separated feature names the MLP does not see (for comparisons)
  bool bag = false;  // each ensemble member trains on a bootstrap sample of the training rows
  // Train the predictors of one kind together (one network, a one-hot input per predictor), for the
  // kinds listed (e.g. conv2d); each predictor is still exported as its own MLP.
  std::string joint;
  int batch = 1024;  // minibatch rows
  bool extra_features = false;  // also the optional features (features.hpp: extra_feature_names)
  // No training: write each predictor's training range (feature_min / feature_max) into the predictor
  // folder given, from the training rows of --data / --files (the files it was trained on).
  std::string add_ranges;
  double min_time_s = 0;  // --evaluate: only rows whose measured time is at least this
  // Channels_last convolution predictors learn log(time / the contiguous twin's predicted time), the
  // base being the shipped predictors of --gpu (MlpComputeModel); exported as ratio predictors (ratio_of).
  bool ratio = false;
  // Rows measured on other GPUs (GPU:FILE,...), trained beside --data's in the --joint networks with
  // features and target relative to their own GPU; their predictors are not written.
  std::string with_data;
};

// The GPU a group of training rows was measured on: its features and target are relative to it.
struct GpuContext {
  int sms = 0;
  Baseline base;
};

// --with-data rows are keyed KEY@GPU: the predictor they help train, and the GPU they were measured on.
bool auxiliary_key(const std::string& key) { return key.find('@') != std::string::npos; }
std::string shared_key(const std::string& key) { return key.substr(0, key.find('@')); }

// --ratio: each channels_last row's base (its contiguous twin's time by the shipped predictors of the
// GPU), and the key of the predictor the ratio multiplies, per ratio key.
struct Ratio {
  std::map<const Sample*, double> base;
  std::map<std::string, std::string> of;
};

// Predictors held to the matmul target: convolutions, GEMMs and attention (its two products per block).
bool matmul_like(const std::string& key) {
  return key.rfind("conv2d/", 0) == 0 || key.rfind("gemm/", 0) == 0 || key.rfind("attention/", 0) == 0;
}

// The time a row's target is relative to: the base for a ratio key's rows, else the roofline baseline.
double reference_s(const Sample& s, const Baseline& base, const Ratio* ratio) {
  if (ratio && ratio->of.count(s.key)) return ratio->base.at(&s);
  return base.seconds(s.kernel);
}

// How close a measured kernel came to the datasheet roofline (1: at the peak or the bandwidth).
double roofline_fraction(const Sample& s, const Baseline& base) {
  return base.roofline_s(s.kernel) / s.time_s;
}

struct ErrorStats {
  size_t rows = 0;
  double mape = 0, median_ape = 0, max_ape = 0;
};

ErrorStats error_stats(const std::vector<double>& predicted, const std::vector<double>& measured) {
  ErrorStats e;
  e.rows = predicted.size();
  if (e.rows == 0) return e;
  std::vector<double> ape(e.rows);
  for (size_t i = 0; i < e.rows; ++i) ape[i] = std::fabs(predicted[i] - measured[i]) / measured[i];
  for (double a : ape) e.mape += a / e.rows;
  e.max_ape = *std::max_element(ape.begin(), ape.end());
  std::nth_element(ape.begin(), ape.begin() + ape.size() / 2, ape.end());
  e.median_ape = ape[ape.size() / 2];
  return e;
}

Json to_json(const ErrorStats& e) { return Json{{"rows", e.rows}, {"mape", e.mape}, {"median_ape", e.median_ape}, {"max_ape", e.max_ape}}; }

void progress(const std::string& key, int step, int steps, double loss) {
  if (!isatty(STDERR_FILENO)) return;
  const int width = 30;
  int done = static_cast<int>(static_cast<double>(step) / steps * width);
  std::fprintf(stderr, "\r  %-28s [%s%s] %5d/%d  loss %.4f", key.c_str(), std::string(done, '#').c_str(), std::string(width - done, '-').c_str(),
               step, steps, loss);
  if (step == steps) std::fprintf(stderr, "\r%*s\r", 100, "");
  std::fflush(stderr);
}

// Seconds predicted for `samples` by the exported MLP: the run-time path, not torch's (a ratio
// predictor times the bases --ratio computed, which are MlpComputeModel's).
std::vector<double> predict_with(const Mlp& m, const std::vector<const Sample*>& samples, int sms, const Baseline& base,
                                 const Ratio* ratio = nullptr) {
  std::vector<KernelDesc> ks;
  std::vector<double> bases;
  for (const Sample* s : samples) {
    ks.push_back(s->kernel);
    if (!m.ratio_of.empty()) bases.push_back(ratio->base.at(s));
  }
  PredictorSet set;
  set.sm_count = sms;
  set.baseline = base;
  set.by_key.emplace(m.key, m);
  set.has_ratio_predictors = !m.ratio_of.empty();
  std::vector<double> out;
  set.predict(ks, out, nullptr, m.ratio_of.empty() ? nullptr : &bases);
  return out;
}

// Trains one predictor per entry of `keys` on the matching `groups` of training rows. With several
// keys (--joint), one network sees every group's rows plus a one-hot input naming the group; each
// key's exported MLP has that constant input folded into its first layer's bias, so the file format
// and inference are those of a single predictor.
//
// With rows of other GPUs (keys KEY@GPU, --with-data), each group's features and target are relative to
// its own GPU (`ctx`, one per group), and the one-hot names the shared predictor key, plus one column
// per other GPU: the network learns one kernel family across GPUs, and what a GPU changes in it.
std::vector<Mlp> train_group(const std::vector<std::string>& keys, const std::vector<std::vector<const Sample*>>& groups,
                             const std::vector<GpuContext>& ctx, const Options& opt, const std::vector<int>& hidden,
                             const std::string& seed_key, const Ratio* ratio = nullptr) {
  const KernelKind kind = groups.front().front()->kernel.kind;
  std::vector<std::string> names = feature_names(kind);
  if (opt.extra_features) names.insert(names.end(), extra_feature_names(kind).begin(), extra_feature_names(kind).end());
  const int64_t nf = static_cast<int64_t>(names.size());
  // One-hot columns: one per shared key, then one per other GPU (none for a single group).
  std::vector<std::string> onehot;
  auto column = [&onehot](const std::string& name) {
    auto it = std::find(onehot.begin(), onehot.end(), name);
    if (it == onehot.end()) it = onehot.insert(it, name);
    return static_cast<int64_t>(it - onehot.begin());
  };
  if (groups.size() > 1) {
    for (const auto& k : keys) column(shared_key(k));
    for (const auto& k : keys)
      if (auxiliary_key(k)) column(k.substr(k.find('@')));
  }
  const int64_t ng = static_cast<int64_t>(onehot.size());
  auto onehot_of = [&](size_t g) {
    std::vector<int64_t> cols;
    if (ng == 0) return cols;
    cols.push_back(column(shared_key(keys[g])));
    if (auxiliary_key(keys[g])) cols.push_back(column(keys[g].substr(keys[g].find('@'))));
    return cols;
  };
  std::vector<const Sample*> train;
  std::vector<int64_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const Sample* s : groups[g]) train.push_back(s), group_of.push_back(static_cast<int64_t>(g));
  const int64_t n = static_cast<int64_t>(train.size());

  Mlp m;
  m.key = keys.front();
  m.feature_names = names;
  Eigen::MatrixXf x(n, nf);
  Eigen::VectorXf y(n);
  std::vector<double> f;
  for (int64_t i = 0; i < n; ++i) {
    f.clear();
    const GpuContext& g = ctx[group_of[i]];
    features(train[i]->kernel, g.sms, g.base, f, opt.extra_features);
    for (int64_t c = 0; c < nf; ++c) x(i, c) = static_cast<float>(f[c]);
    y(i) = static_cast<float>(std::log(train[i]->time_s / reference_s(*train[i], g.base, ratio)));
  }
  m.feature_mean = x.colwise().mean();
  m.feature_std = ((x.rowwise() - m.feature_mean.transpose()).array().square().colwise().sum() / std::max<int64_t>(n - 1, 1)).sqrt();
  for (Eigen::Index c = 0; c < nf; ++c)
    if (m.feature_std(c) < 1e-6f) m.feature_std(c) = 1;  // a constant feature carries nothing
  // A dropped feature normalises to 0 for every kernel, in training and in inference alike.
  for (const auto& d : split(opt.drop_features, ','))
    for (Eigen::Index c = 0; c < nf; ++c)
      if (!d.empty() && names[c] == d) m.feature_std(c) = 1e30f;
  m.target_mean = y.mean();
  m.target_std = std::sqrt((y.array() - m.target_mean).square().sum() / std::max<int64_t>(n - 1, 1));
  if (m.target_std < 1e-6f) m.target_std = 1;

  Eigen::MatrixXf xn = (x.rowwise() - m.feature_mean.transpose()).array().rowwise() / m.feature_std.transpose().array();
  Eigen::VectorXf yn = (y.array() - m.target_mean) / m.target_std;
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> xr(n, nf + ng);
  xr.leftCols(nf) = xn;
  if (ng) {
    xr.rightCols(ng).setZero();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c : onehot_of(group_of[i])) xr(i, nf + c) = 1;
  }
  torch::Tensor X = torch::from_blob(xr.data(), {n, nf + ng}, torch::kFloat32).clone();
  torch::Tensor Y = torch::from_blob(yn.data(), {n, 1}, torch::kFloat32).clone();
  const double tstd = m.target_std;

  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::vector<std::vector<RowMatrix>> member_w;
  std::vector<std::vector<Eigen::VectorXf>> member_b;
  for (int member = 0; member < opt.ensemble; ++member) {
    const uint64_t seed = static_cast<uint64_t>(opt.seed) + 7919ULL * static_cast<uint64_t>(member);
    torch::manual_seed(seed + std::hash<std::string>{}(seed_key) % 1000003);
    torch::nn::Sequential net;
    int64_t in = nf + ng;
    for (int h : hidden) {
      net->push_back(torch::nn::Linear(in, h));
      net->push_back(torch::nn::ReLU());
      in = h;
    }
    net->push_back(torch::nn::Linear(in, 1));

    const double lr0 = opt.lr;
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(lr0).weight_decay(opt.weight_decay));
    const int64_t batch = std::min<int64_t>(n, opt.batch);
    torch::Generator gen = at::detail::createCPUGenerator(seed);
    torch::Tensor Xm = X, Ym = Y;
    if (opt.bag) {  // bagging: each member trains on its own bootstrap sample of the rows
      torch::Tensor idx = torch::randint(n, {n}, gen, torch::kLong);
      Xm = X.index_select(0, idx);
      Ym = Y.index_select(0, idx);
    }
    double loss_value = 0;
    for (int step = 1; step <= opt.steps; ++step) {
      double lr = 1e-5 + 0.5 * (lr0 - 1e-5) * (1 + std::cos(M_PI * step / opt.steps));
      for (auto& g : adam.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
      torch::Tensor xb = Xm, yb = Ym;
      if (batch < n) {
        torch::Tensor idx = torch::randint(n, {batch}, gen, torch::kLong);
        xb = Xm.index_select(0, idx);
        yb = Ym.index_select(0, idx);
      }
      adam.zero_grad();
      // In log space. Huber: quadratic for small errors, linear for the few shapes where cuDNN picked
      // a poor algorithm, which would otherwise pull the fit towards them. L1 fits the median ratio.
      // mape: the relative error |exp(d) - 1| itself (d the log-ratio error), the metric the
      // predictors are judged by; linear in d beyond |d| = 1 so that early, large errors keep a gradient.
      torch::Tensor loss;
      if (opt.loss == "l1") loss = torch::l1_loss(net->forward(xb), yb);
      else if (opt.loss == "mape") {
        torch::Tensor d = (net->forward(xb) - yb) * tstd;
        const double e = std::exp(1.0), ie = std::exp(-1.0);
        torch::Tensor rel = torch::where(d > 1, (e - 1) + e * (d - 1), torch::where(d < -1, (1 - ie) + ie * (-1 - d), torch::abs(torch::expm1(d))));
        loss = rel.mean();
      } else loss = torch::smooth_l1_loss(net->forward(xb), yb, at::Reduction::Mean, opt.huber_beta);
      loss.backward();
      adam.step();
      if (step % 100 == 0 || step == opt.steps) {
        loss_value = loss.item<double>();
        progress(seed_key, step, opt.steps, loss_value);
      }
    }

    member_w.emplace_back();
    member_b.emplace_back();
    for (const auto& module : net->children()) {
      if (auto* lin = module->as<torch::nn::Linear>()) {
        torch::Tensor w = lin->weight.detach().contiguous(), b = lin->bias.detach().contiguous();
        RowMatrix wm(w.size(0), w.size(1));
        std::memcpy(wm.data(), w.data_ptr<float>(), sizeof(float) * w.numel());
        Eigen::VectorXf bv(b.size(0));
        std::memcpy(bv.data(), b.data_ptr<float>(), sizeof(float) * b.numel());
        member_w.back().push_back(std::move(wm));
        member_b.back().push_back(std::move(bv));
      }
    }
  }

  // An ensemble is one wider MLP: the members' first layers stacked, their hidden layers block-diagonal
  // and their output layers averaged (the mean of the members' log ratios, a geometric mean of times).
  std::vector<Mlp> out;
  const size_t layers = member_w.front().size();
  const int e = opt.ensemble;
  for (size_t gi = 0; gi < keys.size(); ++gi) {
    Mlp mk = m;
    mk.key = keys[gi];
    if (ratio && ratio->of.count(mk.key)) mk.ratio_of = ratio->of.at(mk.key);
    // The training range of this key's own rows: inference clamps to it and calls the rest extrapolation.
    mk.feature_min = Eigen::VectorXf::Constant(nf, std::numeric_limits<float>::max());
    mk.feature_max = Eigen::VectorXf::Constant(nf, std::numeric_limits<float>::lowest());
    for (int64_t i = 0; i < n; ++i)
      if (group_of[i] == static_cast<int64_t>(gi)) {
        mk.feature_min = mk.feature_min.cwiseMin(x.row(i).transpose());
        mk.feature_max = mk.feature_max.cwiseMax(x.row(i).transpose());
        mk.max_roofline_fraction = std::max(mk.max_roofline_fraction, std::min(1.0, roofline_fraction(*train[i], ctx[gi].base)));
      }
    std::vector<std::vector<RowMatrix>> mw = member_w;
    std::vector<std::vector<Eigen::VectorXf>> mb = member_b;
    if (ng)  // the key's constant one-hot input, folded into the first layer's bias
      for (int k = 0; k < e; ++k) {
        for (int64_t c : onehot_of(gi)) mb[k][0] += mw[k][0].col(nf + static_cast<Eigen::Index>(c));
        RowMatrix w0 = mw[k][0].leftCols(nf);
        mw[k][0] = w0;
      }
    for (size_t l = 0; l < layers; ++l) {
      const Eigen::Index rows = mw[0][l].rows(), cols = mw[0][l].cols();
      const bool first = l == 0, last = l + 1 == layers;
      RowMatrix w = RowMatrix::Zero(last ? 1 : rows * e, first ? cols : cols * e);
      Eigen::VectorXf b = Eigen::VectorXf::Zero(last ? 1 : rows * e);
      for (int k = 0; k < e; ++k) {
        if (last) {
          w.block(0, k * cols, 1, cols) = mw[k][l] / static_cast<float>(e);
          b += mb[k][l] / static_cast<float>(e);
        } else {
          w.block(k * rows, first ? 0 : k * cols, rows, cols) = mw[k][l];
          b.segment(k * rows, rows) = mb[k][l];
        }
      }
      mk.weights.push_back(std::move(w));
      mk.biases.push_back(std::move(b));
    }
    out.push_back(std::move(mk));
  }
  return out;
}

// Absolute errors summed over rows, for totals across predictors.
struct ErrorSum {
  double ape = 0, graph_ape = 0;
  size_t n = 0, graph_n = 0;
};

// Convolutions apart by the kernel that ran: cuDNN's (what the predictors learn), or PyTorch's own
// depthwise kernels (Sample::pytorch_native_depthwise), which no predictor describes yet.
static void split_convolutions(const char* part, const std::vector<KernelDesc>& ks, const std::vector<const Sample*>& rows,
                               const std::vector<KernelTime>& t, const ErrorStats& e, const ErrorStats& g, std::map<std::string, ErrorSum>& total) {
  ErrorSum& library = total[std::string(part) + " conv2d, cuDNN's"];
  ErrorSum& native = total[std::string(part) + " conv2d, PyTorch's native depthwise"];
  library.ape += e.mape * e.rows, library.n += e.rows, library.graph_ape += g.mape * g.rows, library.graph_n += g.rows;
  for (size_t i = 0; i < ks.size(); ++i) {
    if (!rows[i]->pytorch_native_depthwise) continue;
    const double ape = std::fabs(t[i].seconds / rows[i]->time_s - 1);
    native.ape += ape, ++native.n, library.ape -= ape, --library.n;
    if (std::isnan(rows[i]->graph_time_s)) continue;
    const double gape = std::fabs(t[i].seconds / rows[i]->graph_time_s - 1);
    native.graph_ape += gape, ++native.graph_n, library.graph_ape -= gape, --library.graph_n;
  }
}

// Every row of --data through the shipped predictors (scaled by the roofline ratio when they were
// measured elsewhere), beside the plain roofline's error on the same rows. Rows of files with a split
// column are reported apart where they lie beyond the training range, and rows with a CUDA-graph time
// are also scored against it (GPU time alone).
int evaluate(const std::map<std::string, std::vector<Sample>>& by_key, const GpuSpec& gpu, double min_time_s, const std::string& dump_path) {
  std::string dump = "key,part,shape,flops,measured_s,graph_s,predicted_s,in_range\n";
  MlpComputeModel model(gpu);
  RooflineModel roof(gpu);
  std::printf("%s\n", model.note().c_str());
  if (min_time_s > 0) std::printf("rows measured at least %.3g s\n", min_time_s);
  std::printf("%-30s %-7s %6s %8s %8s %8s %8s %8s %7s\n", "predictor", "part", "rows", "MAPE", "median", "bias", "graph", "roofline",
              "extrap");
  std::map<std::string, ErrorSum> total;
  for (const auto& [key, samples] : by_key) {
    for (int beyond = 0; beyond < 2; ++beyond) {
      std::vector<KernelDesc> ks;
      std::vector<const Sample*> rows;
      for (const auto& s : samples)
        if (s.beyond == (beyond == 1) && s.time_s >= min_time_s && model.covers(s.kernel)) ks.push_back(s.kernel), rows.push_back(&s);
      if (ks.empty()) continue;
      std::vector<KernelTime> t;
      model.times(ks, t);
      std::vector<double> predicted, measured, roofline, pg, mg;
      size_t extrapolated = 0;
      for (size_t i = 0; i < ks.size(); ++i) {
        predicted.push_back(t[i].seconds);
        measured.push_back(rows[i]->time_s);
        roofline.push_back(roof.time(ks[i]).seconds);
        extrapolated += !t[i].in_range;
        if (!std::isnan(rows[i]->graph_time_s)) pg.push_back(t[i].seconds), mg.push_back(rows[i]->graph_time_s);
        if (!dump_path.empty()) {
          std::string shape;
          for (size_t f = 0; f < kernel_shape_fields(ks[i].kind).size(); ++f) shape += (f ? " " : "") + std::to_string(ks[i].shape[f]);
          char b[160];
          std::snprintf(b, sizeof b, ",%.4g,%.4g,%.4g,%.4g,%d\n", ks[i].flops, rows[i]->time_s, rows[i]->graph_time_s, t[i].seconds, t[i].in_range ? 1 : 0);
          dump += key + "," + (beyond ? "beyond" : "all") + "," + shape + b;
        }
      }
      ErrorStats e = error_stats(predicted, measured), r = error_stats(roofline, measured), g = error_stats(pg, mg);
      double bias = 0;  // mean signed error: positive when predictions are too slow
      for (size_t i = 0; i < measured.size(); ++i) bias += (predicted[i] - measured[i]) / measured[i] / measured.size();
      const char* part = beyond ? "beyond" : "all";
      char gs[16] = "-";
      if (g.rows) std::snprintf(gs, sizeof gs, "%7.2f%%", 100 * g.mape);
      std::printf("%-30s %-7s %6zu %7.2f%% %7.2f%% %+7.2f%% %8s %7.2f%% %6zu\n", key.c_str(), part, e.rows, 100 * e.mape, 100 * e.median_ape,
                  100 * bias, gs, 100 * r.mape, extrapolated);
      ErrorSum& sm = total[std::string(part) + " " + key.substr(0, key.find('/'))];
      sm.ape += e.mape * e.rows, sm.n += e.rows, sm.graph_ape += g.mape * g.rows, sm.graph_n += g.rows;
      if (key.rfind("conv2d/", 0) == 0) split_convolutions(part, ks, rows, t, e, g, total);
    }
  }
  for (const auto& [what, sm] : total)
    if (sm.n > 0)
      std::printf("%-20s rows %6zu  MAPE %6.2f%%  against graph time: %s\n", what.c_str(), sm.n, 100 * sm.ape / sm.n,
                sm.graph_n ? (std::to_string(sm.graph_n) + " rows, " + std::to_string(100 * sm.graph_ape / sm.graph_n).substr(0, 5) + "%").c_str() : "-");
  if (!dump_path.empty()) write_file_atomic(dump_path, dump);
  return 0;
}

// --add-ranges: predictors trained before the manifest carried their training range get it from the
// same rows they were trained on (the hash split's training part), their weights untouched.
int add_ranges(const std::string& dir, const std::map<std::string, std::vector<Sample>>& by_key) {
  PredictorSet set = load_predictors(dir);
  Json manifest = set.manifest;
  size_t done = 0;
  for (Json& p : manifest.at("predictors")) {
    const Mlp& m = set.by_key.at(p.at("key").get<std::string>());
    auto it = by_key.find(m.key);
    if (it == by_key.end()) continue;
    const size_t nf = m.feature_names.size();
    const bool extended = nf > feature_names(it->second.front().kernel.kind).size();
    std::vector<float> lo(nf, std::numeric_limits<float>::max()), hi(nf, std::numeric_limits<float>::lowest());
    std::vector<double> f;
    size_t rows = 0;
    double best_fraction = 0;
    for (const auto& s : it->second) {
      if (s.beyond || is_heldout(s.kernel)) continue;
      best_fraction = std::max(best_fraction, roofline_fraction(s, set.baseline));
      f.clear();
      features(s.kernel, set.sm_count, set.baseline, f, extended);
      for (size_t c = 0; c < nf; ++c) lo[c] = std::min(lo[c], static_cast<float>(f[c])), hi[c] = std::max(hi[c], static_cast<float>(f[c]));
      ++rows;
    }
    if (rows == 0) continue;
    p["feature_min"] = lo;
    p["feature_max"] = hi;
    // Capped at 1: a few measured rows beat the datasheet bandwidth (kernels_mlp/README.md); physics
    // bounds the predictions regardless (MlpComputeModel).
    best_fraction = std::min(best_fraction, 1.0);
    p["max_roofline_fraction"] = best_fraction;
    // Held-out rows outside the training range are now clamped at inference: their error is remeasured
    // (the figure before is kept beside it).
    Mlp clamped = m;
    clamped.feature_min = Eigen::Map<const Eigen::VectorXf>(lo.data(), static_cast<Eigen::Index>(nf));
    clamped.feature_max = Eigen::Map<const Eigen::VectorXf>(hi.data(), static_cast<Eigen::Index>(nf));
    clamped.max_roofline_fraction = best_fraction;
    std::vector<const Sample*> held;
    std::vector<double> measured;
    for (const auto& s : it->second)
      if (!s.beyond && is_heldout(s.kernel)) held.push_back(&s), measured.push_back(s.time_s);
    // (A ratio predictor is trained with its range; its held-out error needs its base: left as trained.)
    if (!held.empty() && m.ratio_of.empty() && p.contains("heldout") && p["heldout"].contains("mape")) {
      const ErrorStats e = error_stats(predict_with(clamped, held, set.sm_count, set.baseline), measured);
      Json& h = p["heldout"];
      if (!h.contains("mape_unclamped")) h["mape_unclamped"] = h["mape"];
      h["mape"] = e.mape;
      h["median_ape"] = e.median_ape;
      h["max_ape"] = e.max_ape;
    }
    ++done;
  }
  write_file_atomic(dir + "/manifest.json", manifest.dump(1) + "\n");
  std::printf("training ranges written for %zu of %zu predictors in %s\n", done, manifest.at("predictors").size(), dir.c_str());
  return 0;
}

int run(int argc, char** argv) {
  Options opt;
  CLI::App app{"dtsim train-predictors: trains MLP kernel-time predictors on measured kernel datasets (LibTorch, CPU)"};
  app.add_option("--data", opt.data, "Measured data folder, e.g. validation/data/h100-sxm (its kernels/ subfolder is used if present)")->required();
  app.add_option("--out", opt.out, "Output predictor folder, e.g. kernels_mlp/pretrained/h100-sxm");
  app.add_option("--gpu", opt.gpu, "GPU name (configs/gpus/NAME.json); default: the data folder's name");
  app.add_option("--seed", opt.seed, "Random seed")->capture_default_str();
  app.add_option("--steps", opt.steps, "Optimizer steps per predictor")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--hidden", opt.hidden, "Hidden layer widths")->capture_default_str();
  app.add_option("--weight-decay", opt.weight_decay, "Adam weight decay")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--huber-beta", opt.huber_beta, "Huber loss threshold, in target standard deviations")->check(CLI::Range(1e-4, 100.0))->capture_default_str();
  app.add_option("--files", opt.files, "Comma-separated CSV files of the data folder to use (default: all)");
  app.add_option("--target-matmul", opt.target_matmul, "Held-out MAPE a conv2d/gemm/attention predictor must meet to be written")->capture_default_str();
  app.add_option("--target-vector", opt.target_vector, "Held-out MAPE other predictors must meet to be written")->capture_default_str();
  app.add_flag("--keep-below-target", opt.keep_below_target,
               "Also write predictors that miss their target but beat the roofline on the same held-out shapes (marked in the manifest)");
  app.add_flag("--evaluate", opt.evaluate,
               "Score the shipped predictors (kernels_mlp/pretrained, or $DTSIM_PREDICTOR_DIR) on all rows of --data measured on --gpu, "
               "e.g. H100 predictors on H200 data; --out is ignored");
  app.add_option("--add-ranges", opt.add_ranges,
                 "Write the training range of each predictor of this folder into its manifest, from the training rows of "
                 "--data/--files (no training)");
  app.add_flag("--ratio", opt.ratio,
               "Channels_last convolution predictors learn the ratio of their time to the contiguous twin's time by the "
               "shipped predictors of --gpu (kernels_mlp/pretrained or $DTSIM_PREDICTOR_DIR), and are written as ratio "
               "predictors (manifest ratio_of): time = base prediction x ratio");
  app.add_option("--min-time-s", opt.min_time_s, "--evaluate: score only rows measured at least this long (e.g. 20e-6)");
  app.add_flag("--validate", opt.validate,
               "Model selection: train on the training shapes whose hash is 2-4 mod 5 and report the error on those with 1 mod 5; "
               "held-out shapes are neither read nor reported and nothing is written");
  app.add_option("--loss", opt.loss, "Loss: huber or l1 in log space, or mape (the relative error itself)")
      ->check(CLI::IsMember({"huber", "l1", "mape"}))->capture_default_str();
  app.add_flag("--bag", opt.bag, "Bagging: each ensemble member trains on its own bootstrap sample of the training rows");
  app.add_option("--joint", opt.joint,
                 "Comma-separated kernel kinds (e.g. conv2d) whose predictors are trained as one network with a one-hot "
                 "predictor input (folded into each exported MLP)");
  app.add_option("--with-data", opt.with_data,
                 "Comma-separated GPU:FILE kernel CSVs measured on other GPUs, trained beside --data's rows in the --joint networks "
                 "(features and target relative to their own GPU, a one-hot input per GPU); only --gpu's predictors are written");
  app.add_flag("--extra-features", opt.extra_features,
               "Also give the MLPs the optional features (convolutions: power-of-two alignment of channels, spatial sizes "
               "and the pass's implicit GEMM; GEMMs: alignment of M, N, K, tiles for more tile shapes, matrix bytes)");
  app.add_option("--batch", opt.batch, "Minibatch rows")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--lr", opt.lr, "Peak Adam learning rate (cosine decay)")->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  app.add_option("--ensemble", opt.ensemble, "MLPs per predictor, averaged in log space (packed into one MLP)")
      ->check(CLI::Range(1, 16))->capture_default_str();
  app.add_option("--drop-features", opt.drop_features, "Comma-separated feature names to hide from the MLPs (comparisons)");
  app.add_option("--dump", opt.dump, "Write every row's measured and predicted time to this CSV");
  app.add_option("--min-rows", opt.min_rows, "Fewest training rows a predictor needs")->check(CLI::Range(2, 1000000))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "dtsim train-predictors: error: %s\n", e.what());
    return 2;
  }
  std::vector<int> hidden;
  {
    std::string s = opt.hidden;
    size_t pos = 0;
    while (pos <= s.size()) {
      size_t end = s.find(',', pos);
      std::string t = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      char* e = nullptr;
      long v = std::strtol(t.c_str(), &e, 10);
      if (t.empty() || *e || v < 1 || v > 4096) throw InputError("--hidden", "'" + opt.hidden + "' must be widths like 64,64,64");
      hidden.push_back(static_cast<int>(v));
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }

  std::string data_dir = fs::is_directory(opt.data + "/kernels") ? opt.data + "/kernels" : opt.data;
  if (!fs::is_directory(data_dir)) throw InputError("--data", "'" + opt.data + "' is not a folder");
  if (opt.gpu.empty()) opt.gpu = fs::path(opt.data).lexically_normal().filename().string();
  if (opt.gpu.empty()) opt.gpu = fs::path(opt.data).lexically_normal().parent_path().filename().string();
  GpuSpec gpu = load_gpu(opt.gpu);
  Baseline base = baseline_of(gpu);

  torch::set_num_threads(1);
  std::vector<std::string> files;
  std::map<std::string, std::vector<Sample>> by_key;
  if (opt.files.empty()) {
    by_key = read_kernel_dataset(data_dir, &files);
  } else {
    for (const auto& f : split(opt.files, ',')) {
      files.push_back(data_dir + "/" + f);
      for (auto& s : read_kernel_csv(files.back())) by_key[s.key].push_back(std::move(s));
    }
  }
  if (by_key.empty()) throw InputError(data_dir, "no kernel rows to train on (expected the harness's CSVs)");
  const GpuContext own{gpu.sm_count, base};
  std::map<std::string, GpuContext> other_gpus;
  Json with_data = Json::array();
  if (!opt.with_data.empty() && (opt.evaluate || !opt.add_ranges.empty()))
    throw InputError("--with-data", "is for training; --evaluate and --add-ranges read --data alone");
  for (const auto& item : split(opt.with_data, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      throw InputError("--with-data", "'" + item + "' must be GPU:FILE, e.g. h100-sxm:validation/data/h100-sxm/kernels/conv2d_graph.csv");
    const std::string other = item.substr(0, colon), file = item.substr(colon + 1);
    if (other == opt.gpu) throw InputError("--with-data", "'" + item + "' names --gpu itself; give its files with --files");
    if (opt.joint.empty()) throw InputError("--with-data", "needs --joint: other GPUs' rows are trained beside this GPU's in one network");
    const GpuSpec og = load_gpu(other);
    other_gpus.emplace(other, GpuContext{og.sm_count, baseline_of(og)});
    for (auto& s : read_kernel_csv(file)) {
      s.key += "@" + other;
      by_key[s.key].push_back(std::move(s));
    }
    with_data.push_back({{"gpu", other}, {"file", fs::path(file).lexically_normal().generic_string()}, {"fnv1a64", file_fnv1a64(file)}});
  }

  if (opt.evaluate) return evaluate(by_key, gpu, opt.min_time_s, opt.dump);
  if (!opt.add_ranges.empty()) return add_ranges(opt.add_ranges, by_key);
  if (opt.out.empty() && !opt.validate) throw InputError("--out", "required when training");

  Json manifest;
  manifest["format"] = 1;
  manifest["gpu"] = opt.gpu;
  manifest["baseline"] = baseline_json(base, gpu.sm_count);
  manifest["trained_with"] = {{"program", "dtsim-train-predictors"}, {"libtorch", TORCH_VERSION}, {"seed", opt.seed}, {"steps", opt.steps},
                              {"hidden", hidden}, {"weight_decay", opt.weight_decay}, {"loss", opt.loss}, {"lr", opt.lr},
                              {"ensemble", opt.ensemble},
                              {"split", "held-out: shapes whose FNV-1a hash is 0 mod 5"}};
  if (opt.bag) manifest["trained_with"]["bag"] = true;  // the newer options, recorded when used
  if (opt.ratio) manifest["trained_with"]["ratio"] = true;
  if (!opt.joint.empty()) manifest["trained_with"]["joint"] = opt.joint;
  if (!with_data.empty()) manifest["trained_with"]["with_data"] = with_data;
  if (opt.batch != 1024) manifest["trained_with"]["batch"] = opt.batch;
  if (opt.extra_features) manifest["trained_with"]["extra_features"] = true;
  Json data = Json::array();
  // Relative to data_dir, as --files named them (a file of a sibling folder as ../kernels_beyond/gemm.csv).
  for (const auto& f : files)
    data.push_back({{"file", fs::path(f).lexically_relative(data_dir).generic_string()}, {"fnv1a64", file_fnv1a64(f)}});
  manifest["data"] = std::move(data);
  // Relative to the repository root when run from it (as the README says), so tests can re-check it.
  manifest["data_dir"] = fs::path(data_dir).lexically_normal().string();
  for (const std::string& prov : {data_dir + "/provenance.json", opt.data + "/provenance.json"})
    if (fs::exists(prov)) {
      manifest["provenance"] = load_json_file(prov);
      break;
    }

  // --ratio: every channels_last convolution row's base, its contiguous twin timed by the shipped
  // predictors; rows without a measured base (none expected) are left out.
  Ratio ratio;
  if (opt.ratio) {
    MlpComputeModel base_model(gpu);
    for (auto& [key, samples] : by_key) {
      if (samples.empty() || samples.front().kernel.kind != KernelKind::Conv2d || samples.front().kernel.format != MemoryFormat::ChannelsLast)
        continue;
      std::vector<KernelDesc> twins;
      for (const auto& s : samples) {
        twins.push_back(s.kernel);
        twins.back().format = MemoryFormat::Contiguous;
      }
      std::vector<KernelTime> t;
      base_model.times(twins, t);
      std::vector<Sample> kept;
      for (size_t i = 0; i < samples.size(); ++i)
        if (t[i].source == TimeSource::Mlp) kept.push_back(samples[i]);
      if (kept.size() < samples.size())
        std::printf("%-30s %zu rows without a measured base left out\n", key.c_str(), samples.size() - kept.size());
      samples = std::move(kept);
      for (size_t i = 0, j = 0; i < t.size(); ++i)
        if (t[i].source == TimeSource::Mlp) ratio.base[&samples[j++]] = t[i].seconds;
      if (!samples.empty()) ratio.of[key] = predictor_key(twins.front());
    }
    std::printf("ratio predictors: %zu keys, bases from %s\n", ratio.of.size(), base_model.note().c_str());
  }
  const Ratio* ratio_ptr = opt.ratio ? &ratio : nullptr;

  RooflineModel roof(gpu);
  std::vector<Mlp> mlps;
  std::string dump = "key,part,shape,measured_s,predicted_s\n";
  const char* part = opt.validate ? "valid" : "heldout";
  std::printf("%-30s %7s %7s %9s %9s %9s %9s\n", "predictor", "train", part, "train", part, part, part);
  std::printf("%-30s %7s %7s %9s %9s %9s %9s\n", "", "rows", "rows", "MAPE", "MAPE", "median", "max");
  std::map<std::string, std::vector<const Sample*>> train_of, held_of;
  for (const auto& [key, samples] : by_key) {
    auto& train = train_of[key];
    auto& held = held_of[key];
    for (const auto& s : samples) {
      if (s.beyond) continue;  // beyond the training range by construction: scored by --evaluate, never trained on
      if (!opt.validate) (is_heldout(s.kernel) ? held : train).push_back(&s);
      else if (!is_heldout(s.kernel)) (shape_hash(s.kernel) % 5 == 1 ? held : train).push_back(&s);
    }
  }
  std::map<std::string, Mlp> joint_mlps;  // --joint: trained before the per-predictor loop
  for (const auto& kind : split(opt.joint, ',')) {
    if (kind.empty()) continue;
    std::vector<std::string> keys;
    std::vector<std::vector<const Sample*>> groups;
    for (const auto& [key, train] : train_of)
      if (key.rfind(kind + "/", 0) == 0 && static_cast<int>(train.size()) >= opt.min_rows) keys.push_back(key), groups.push_back(train);
    if (keys.empty()) continue;
    std::vector<GpuContext> ctx;
    for (const auto& k : keys) ctx.push_back(auxiliary_key(k) ? other_gpus.at(k.substr(k.find('@') + 1)) : own);
    for (auto& m : train_group(keys, groups, ctx, opt, hidden, kind + "/joint", ratio_ptr))
      if (!auxiliary_key(m.key)) joint_mlps.emplace(m.key, std::move(m));
  }
  for (const auto& [key, samples] : by_key) {
    const auto& train = train_of[key];
    const auto& held = held_of[key];
    if (static_cast<int>(train.size()) < opt.min_rows) {
      std::printf("%-30s %7zu %7zu  skipped: fewer than %d training rows\n", key.c_str(), train.size(), held.size(), opt.min_rows);
      continue;
    }
    if (auxiliary_key(key)) continue;  // another GPU's rows: trained beside this GPU's, never written
    Mlp m = joint_mlps.count(key) ? joint_mlps.at(key) : std::move(train_group({key}, {train}, {own}, opt, hidden, key, ratio_ptr).front());
    auto measured = [](const std::vector<const Sample*>& v) {
      std::vector<double> t;
      for (const Sample* s : v) t.push_back(s->time_s);
      return t;
    };
    auto p_train = predict_with(m, train, gpu.sm_count, base, ratio_ptr), p_held = predict_with(m, held, gpu.sm_count, base, ratio_ptr);
    ErrorStats tr = error_stats(p_train, measured(train));
    ErrorStats ho = error_stats(p_held, measured(held));
    if (!opt.dump.empty()) {
      auto rows = [&](const char* part, const std::vector<const Sample*>& v, const std::vector<double>& p) {
        for (size_t i = 0; i < v.size(); ++i) {
          std::string shape;
          for (size_t f = 0; f < kernel_shape_fields(v[i]->kernel.kind).size(); ++f) shape += (f ? " " : "") + std::to_string(v[i]->kernel.shape[f]);
          char b[96];
          std::snprintf(b, sizeof b, ",%.4g,%.4g\n", v[i]->time_s, p[i]);
          dump += key + "," + part + "," + shape + b;
        }
      };
      rows("train", train, p_train);
      rows(opt.validate ? "validation" : "heldout", held, p_held);
    }
    const double target = matmul_like(key) ? opt.target_matmul : opt.target_vector;
    m.heldout = to_json(ho);
    m.heldout["train_rows"] = tr.rows;
    m.heldout["train_mape"] = tr.mape;
    std::printf("%-30s %7zu %7zu %8.2f%% %8.2f%% %8.2f%% %8.1f%%\n", key.c_str(), tr.rows, ho.rows, 100 * tr.mape, 100 * ho.mape,
                100 * ho.median_ape, 100 * ho.max_ape);
    std::fflush(stdout);
    if (opt.validate) continue;
    if (ho.rows == 0) continue;
    m.heldout["meets_target"] = ho.mape <= target;
    if (ho.mape > target) {
      std::vector<double> roof_held;
      for (const Sample* h : held) roof_held.push_back(roof.time(h->kernel).seconds);
      const double roof_mape = error_stats(roof_held, measured(held)).mape;
      m.heldout["roofline_mape"] = roof_mape;
      if (!opt.keep_below_target || ho.mape >= roof_mape) {
        std::printf("%-30s not written: held-out MAPE above its %.0f%% target (roofline %.1f%%; kernels fall back to the roofline)\n",
                    key.c_str(), 100 * target, 100 * roof_mape);
        continue;
      }
      std::printf("%-30s written below its %.0f%% target: beats the roofline's %.1f%% on the same shapes\n", key.c_str(),
                  100 * target, 100 * roof_mape);
    }
    mlps.push_back(std::move(m));
  }
  // The dump is for diagnosis, so it is written also when no predictor met its target.
  if (!opt.dump.empty()) write_file_atomic(opt.dump, dump);
  if (opt.validate) return 0;
  if (mlps.empty()) {
    std::printf("no predictor met its held-out target: nothing written to %s\n", opt.out.c_str());
    return 1;
  }
  write_predictors(opt.out, manifest, mlps);
  std::printf("wrote %zu predictors to %s\n", mlps.size(), opt.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::fprintf(stderr, "dtsim train-predictors: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtsim train-predictors: internal error: %s\n", e.what());
    return 1;
  }
}
