#include <iostream>

#include "cli/command.hpp"
#include "common/output.hpp"

namespace dtsim::cli {

const std::set<std::string> kTableJsonCsv = {"table", "json", "csv"};

void emit(const std::string& out_path, const std::string& text) {
  if (out_path.empty()) std::cout << text << std::flush;
  else write_file_atomic(out_path, text);
}

std::string dump(const Json& j) { return j.dump(2) + "\n"; }

void TrainingFlags::add_to(CLI::App* c) {
  c->add_option("--cluster", cluster, "Cluster preset name or JSON file")->capture_default_str();
  c->add_option("--precision", precision, "fp32 (PyTorch default: TF32 convolutions, FP32 matmuls), tf32, bf16, fp16 (autocast)")
      ->capture_default_str();
  c->add_option("--algo", algo, "All-reduce algorithm")->capture_default_str();
  c->add_flag("--no-overlap", no_overlap, "All-reduce gradients after the backward pass instead of overlapping");
  c->add_option("--format", format, "Output format")->check(CLI::IsMember(kTableJsonCsv))->capture_default_str();
  c->add_option("--out", out, "Write the output to FILE (atomically) instead of stdout");
}

TrainingConfig TrainingFlags::config() const {
  TrainingConfig cfg;
  cfg.precision = parse_precision(precision);
  cfg.algo = algo;
  if (no_overlap) cfg.overlap = false;
  return cfg;
}

}  // namespace dtsim::cli
