#pragma once
// One training run's settings, written once. The library's TrainingConfig (sim/predict.hpp), the
// command line's TrainingFlags (cli/command.hpp) and a sweep's SweepSpec (study/study.hpp) derive
// from these records instead of repeating the fields, so a default is set in one place.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/strategy.hpp"

namespace dtsim {

// How the job trains, apart from its size and precision: what predict() reads, whoever asked.
struct TrainingSettings {
  std::string algo = "auto";  // NCCL's own choice per bucket (network/impl/nccl/nccl.hpp)
  std::string compute_model = "auto";
  std::optional<bool> overlap;  // the framework's setting unless given
  std::string strategy = "dp";  // one of strategy_names() (sim/strategy.hpp)
  StrategyParams strategy_params;
  // Micro-batches per optimizer step (gradient accumulation): the gradients are reduced once per
  // step, after the last micro-batch's backward (DDP's no_sync on the others).
  int grad_accum_steps = 1;
};

// How the step runs, by PyTorch's names: parse_step_mode (sim/predict.hpp) checks them.
struct StepModeNames {
  std::string memory_format = "contiguous";  // contiguous, channels_last
  std::string optimizer = "sgd";             // sgd (momentum), adamw, adam
  std::string execution = "eager";           // eager, cuda-graphs, compile, compile-cuda-graphs
  bool activation_checkpointing = false;     // torch.utils.checkpoint per block (sim/blocks.hpp)
};

// The framework profile that prices a step when none is named: PyTorch with its measured host costs
// (sim/framework.cpp default_framework_profile says why).
inline constexpr const char* kDefaultFrameworkProfile = "pytorch-ops";

// A run as the user names it: the cluster and the framework profile by preset name or file, the
// precision by name. training_config() (sim/predict.hpp) resolves it into a TrainingConfig.
struct RunSpec : TrainingSettings, StepModeNames {
  std::string cluster = "h100-sxm";   // preset name or JSON file
  std::string framework = kDefaultFrameworkProfile;  // host costs: configs/frameworks/NAME.json or a file
  std::string precision = "fp32";     // parse_precision's names
  bool allow_unknown_ops = false;     // ONNX models: cost operators dtsim does not know by roofline
  int64_t seq_len = 0;                // language models: the sequence length (--seq-len); 0: the model's
};

}  // namespace dtsim
