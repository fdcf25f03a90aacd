#include "cli/command.hpp"
#include "cli/study_flags.hpp"
#include "core/args.hpp"
#include "core/output.hpp"
#include "network/collective.hpp"

namespace dtsim::cli {
namespace {

class CollectiveCommand : public Command {
 public:
  CLI::App* add(CLI::App& app) override {
    auto* c = app.add_subcommand("collective", "Predict collective times and bus bandwidth (and which algorithm and protocol NCCL runs)");
    c->add_option("--op", op_, "allreduce, reducescatter, allgather, broadcast, reduce")->capture_default_str();
    c->add_option("--bytes", bytes_, "Message sizes: 4,1M,1G or 4..1G:x2 (K, M, G are binary)")->required();
    c->add_option("--gpus", gpus_, "Number of GPUs (placed on ceil(gpus / gpus_per_node) nodes)")->capture_default_str();
    c->add_option("--cluster", cluster_, "Cluster preset name or JSON file")->capture_default_str();
    cluster_nodes_.add_to(c);
    std::string names;
    for (const auto& n : collective_algorithm_names()) names += (names.empty() ? "" : ", ") + n;
    c->add_option("--algo", algo_, "Algorithm: " + names + " (auto: NCCL's choice of ring/tree and LL/LL128/Simple)")->capture_default_str();
    c->add_option("--nvls", nvls_, "NVLink SHARP on NVSwitch nodes: on or off (default: the cluster file's collectives.nccl.nvls.enabled)")
        ->check(CLI::IsMember({"on", "off"}));
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    c->add_option("--out", out_, "Write the output to FILE (atomically) instead of stdout");
    // predict's hardware what-ifs, through the same flags and checks; only those a collective sees.
    whatif_.add_to(c, false, collective_what_if_axes());
    return c;
  }

  int run() override {
    ClusterSpec c = load_cluster(cluster_);
    cluster_nodes_.apply(c);
    const WhatIf w = whatif_.single();
    c = apply_what_if(c, w);
    if (!nvls_.empty()) c.collectives.nccl.nvls.enabled = nvls_ == "on";
    CollectiveOp op = parse_collective_op(op_);
    auto algo = make_collective_algorithm(algo_);
    Placement where = place(c, gpus_);
    auto sizes = parse_int_list("--bytes", bytes_, 0, int64_t(1) << 50);
    Json rows = Json::array();
    Table t{{"bytes", "gpus", "nodes", "algo", "protocol", "channels", "time", "algbw GB/s", "busbw GB/s"}, {}};
    for (int64_t n : sizes) {
      CollectiveEstimate e = algo->estimate(op, static_cast<double>(n), where, c);
      double s = e.time_s;
      double algbw = s > 0 ? n / s / 1e9 : 0;
      double busbw = algbw * bus_bandwidth_factor(op, where.gpus);
      rows.push_back({{"op", collective_op_name(op)}, {"bytes", n}, {"gpus", where.gpus}, {"nodes", where.nodes}, {"algo", algo->name()},
                      {"chosen_algo", e.algo}, {"protocol", e.protocol.empty() ? Json() : Json(e.protocol)}, {"channels", e.channels},
                      {"time_s", s}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"what_if", w.to_json()}});
      t.rows.push_back({std::to_string(n), std::to_string(where.gpus), std::to_string(where.nodes), e.algo, e.protocol.empty() ? "-" : e.protocol,
                        e.channels ? std::to_string(e.channels) : "-", fmt_time(s), fmt_sig(algbw, 4), fmt_sig(busbw, 4)});
    }
    std::string text;
    if (format_ == "json") text = dump(rows);
    else text = (w.is_baseline() ? "" : "what-if: " + w.label() + "\n") + t.to_text();  // as predict's table says it
    emit(out_, text);
    return 0;
  }

 private:
  std::string op_ = "allreduce", bytes_, cluster_ = "h100-sxm", algo_ = "auto", format_ = "table", out_, nvls_;
  int64_t gpus_ = 2;
  ClusterNodesFlag cluster_nodes_;
  WhatIfFlags whatif_;
};

}  // namespace

std::unique_ptr<Command> make_collective_command() { return std::make_unique<CollectiveCommand>(); }

}  // namespace dtsim::cli
