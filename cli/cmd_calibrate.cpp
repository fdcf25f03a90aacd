// dtsim calibrate: fit NCCL's latency and bandwidth constants (collectives.nccl) to measured
// collective timings and report the fit's error at every size.
#include <cmath>
#include <iostream>

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/output.hpp"
#include "network/calibrate.hpp"
#include "network/measured.hpp"

namespace dtsim::cli {
namespace {

class CalibrateCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("calibrate", "Fit the cluster's collective constants to measured NCCL timings; report the error per size");
    c->add_option("--measured", measured_,
                  "Measurements: the harness's collective JSON (a file or a directory of them) or an nccl-tests log; repeatable")
        ->required();
    c->add_option("--cluster", cluster_, "Cluster preset name or JSON file to start from")->capture_default_str();
    c->add_option("--out", out_, "Write the calibrated cluster JSON to FILE (atomically)");
    c->add_option("--op", op_, "The collective an nccl-tests log measured, when the log does not say");
    gpus_opt_ = c->add_option("--gpus", gpus_, "GPUs of an nccl-tests log that lists no ranks");
    gpn_opt_ = c->add_option("--gpus-per-node", gpus_per_node_,
                             "How the measured GPUs sat: G per node, so a run of p GPUs spanned ceil(p/G) nodes and its network "
                             "constants (collectives.nccl network latencies, link_efficiency.net) are fitted; 1 for NCCL on sockets "
                             "between the GPUs of one host (an emulated cluster). Default: the measurement's own node count, else one node");
    c->add_option("--format", format_, "Report format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    return c;
  }

  int run() override {
    const std::string path = cluster_path(cluster_);
    const Json doc = load_json_file(path);
    const ClusterSpec c = parse_cluster(doc, path);
    std::optional<CollectiveOp> op;
    if (!op_.empty()) op = parse_collective_op(op_);
    std::optional<int> gpus;
    if (gpus_opt_->count()) {  // a given 0 is refused, not taken for "not given"
      if (gpus_ < 1) throw InputError("--gpus", "must be at least 1, got " + std::to_string(gpus_));
      gpus = gpus_;
    }
    if (gpn_opt_->count() && gpus_per_node_ < 1)
      throw InputError("--gpus-per-node", "must be at least 1, got " + std::to_string(gpus_per_node_));
    MeasuredSet all;
    for (const auto& m : measured_) {
      MeasuredSet s = read_measured(m, op, gpus);
      if (gpn_opt_->count())
        for (auto& p : s.points) {
          const int nodes = (p.gpus + gpus_per_node_ - 1) / gpus_per_node_;
          if (p.nodes > 1 && p.nodes != nodes)
            throw InputError(p.where, "the measurement ran on " + std::to_string(p.nodes) + " nodes, not the " + std::to_string(nodes) +
                                          " that --gpus-per-node " + std::to_string(gpus_per_node_) + " gives for " + std::to_string(p.gpus) + " GPUs");
          p.nodes = nodes;
        }
      all.points.insert(all.points.end(), s.points.begin(), s.points.end());
      all.files.insert(all.files.end(), s.files.begin(), s.files.end());
      if (!s.gpu.empty()) all.gpu = s.gpu;
    }
    for (const auto& p : all.points)
      if (p.gpus > c.capacity_gpus() || (p.nodes > 1 && (p.gpus + p.nodes - 1) / p.nodes > c.gpus_per_node))
        throw InputError(p.where, std::to_string(p.gpus) + " GPUs on " + std::to_string(p.nodes) + " node(s) do not fit cluster '" + c.name + "'");
    const CalibrationResult r = calibrate(c, all.points);
    if (!out_.empty()) write_file_atomic(out_, calibrated_cluster_json(doc, r, all.files, all.gpu).dump(2) + "\n");
    std::cout << (format_ == "json" ? report_json(r) : report_table(r)) << std::flush;
    return 0;
  }

 private:
  static std::string pct(double x) { return fmt_sig(100 * x, 3) + "%"; }

  std::string report_table(const CalibrationResult& r) const {
    Table t{{"op", "gpus", "nodes", "bytes", "measured", "predicted", "error", "before", "algo", "protocol"}, {}};
    for (const auto& p : r.points)
      t.rows.push_back({collective_op_name(p.measured.op), std::to_string(p.measured.gpus), std::to_string(p.measured.nodes),
                        std::to_string(static_cast<int64_t>(p.measured.bytes)), fmt_time(p.measured.time_s), fmt_time(p.after_s), pct(p.error()),
                        pct(p.error_before()), p.algo, p.protocol});
    std::string s = t.to_text();
    s += "fitted: ";
    for (size_t i = 0; i < r.fitted.size(); ++i) s += (i ? ", " : "") + r.fitted[i];
    s += "\nchannels " + std::to_string(r.tuning.channels) + "\n";
    s += "median |error| " + pct(r.median_abs_error) + ", max " + pct(r.max_abs_error) + " (before: median " + pct(r.median_abs_error_before) +
         ", max " + pct(r.max_abs_error_before) + ")\n";
    if (!r.held_back.empty()) s += "held back: " + r.held_back + "\n";
    if (!r.at_ceiling.empty()) s += "at ceiling: " + r.at_ceiling + "\n";
    for (const auto& u : r.unpinned) s += "not pinned: " + u + "\n";
    if (out_.empty()) s += "(no --out: the calibrated cluster was not written)\n";
    return s;
  }

  std::string report_json(const CalibrationResult& r) const {
    Json rows = Json::array();
    for (const auto& p : r.points)
      rows.push_back({{"op", collective_op_name(p.measured.op)}, {"gpus", p.measured.gpus}, {"nodes", p.measured.nodes}, {"bytes", p.measured.bytes},
                      {"measured_s", p.measured.time_s}, {"predicted_s", p.after_s}, {"error", p.error()}, {"before_s", p.before_s},
                      {"error_before", p.error_before()}, {"algo", p.algo}, {"protocol", p.protocol}, {"source", p.measured.where}});
    Json j = {{"points", rows},
              {"fitted", r.fitted},
              {"median_abs_error", r.median_abs_error},
              {"max_abs_error", r.max_abs_error},
              {"median_abs_error_before", r.median_abs_error_before},
              {"max_abs_error_before", r.max_abs_error_before},
              {"nccl", nccl_tuning_json(r.tuning)}};
    if (!r.held_back.empty()) j["held_back"] = r.held_back;
    if (!r.at_ceiling.empty()) j["at_ceiling"] = r.at_ceiling;
    if (!r.unpinned.empty()) j["not_pinned"] = r.unpinned;
    if (!out_.empty()) j["out"] = out_;
    return dump(j);
  }

  std::vector<std::string> measured_;
  std::string cluster_ = "h100-sxm", out_, op_, format_ = "table";
  int gpus_ = 0;
  CLI::Option* gpus_opt_ = nullptr;
  int gpus_per_node_ = 0;
  CLI::Option* gpn_opt_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> make_calibrate_command() { return std::make_unique<CalibrateCommand>(); }

}  // namespace dtsim::cli
