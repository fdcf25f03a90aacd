// Provenance: what ran where. Written beside every data file as provenance.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "util.hpp"

namespace dh {

// GPU (cudaDeviceProp, attributes, NVML clocks when libnvidia-ml can be loaded), driver, CUDA
// runtime, cuDNN, cuBLAS and NCCL versions and the paths of the libraries actually loaded, host
// name, date, harness version, git commit (--git-commit or $DTSIM_GIT_COMMIT).
nlohmann::json collect_provenance(int device, const Args& args, const std::string& mode);
// GPU clocks now (NVML; empty object when NVML is unavailable): sm_mhz, mem_mhz, temperature_c, power_w.
nlohmann::json gpu_clocks_now(int device);
// Short name for data folders: "h100-sxm", "h200-sxm", else the lower-cased name with dashes.
std::string gpu_short_name(int device);
void write_json(const std::string& path, const nlohmann::json& j);

}  // namespace dh
