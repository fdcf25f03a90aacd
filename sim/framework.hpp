#pragma once
// Framework profiles (configs/frameworks/NAME.json): the host costs of the program that drives
// training, measured from runs (docs/design.md §3, Iteration model): the time to issue one kernel
// and the fixed time of one iteration. A profile overrides the cluster's framework section; buckets
// and overlap stay the cluster's (or the run's, in validation).
#include <map>
#include <string>
#include <vector>

#include "sim/run_spec.hpp"
#include "network/cluster.hpp"

namespace dtsim {

struct FrameworkProfile : FrameworkHostCosts {
  std::string name;
  std::string file;
};

// A profile name (configs/frameworks/NAME.json) or a path to a .json file; strict reading,
// InputError naming the file, the JSON path and the rule.
FrameworkProfile load_framework(const std::string& name_or_path);
FrameworkProfile parse_framework(const Json& doc, const std::string& what);
// The profile that prices a measured run of `framework` ("harness", "pytorch") when none is named,
// (kDefaultFrameworkProfile for PyTorch's runs).
std::string default_framework_profile(const std::string& framework);
std::vector<std::string> framework_presets();

// The cluster with the profile's host costs in its framework section.
ClusterSpec apply_framework(ClusterSpec c, const FrameworkProfile& f);

// DDP's bucket size, PyTorch's bucket_cap_mb (MiB; 25 by default): every bucket after the first
// closes once it holds this many gradient bytes. InputError(where, ...) unless in (0, kMaxBucketMb].
constexpr double kMaxBucketMb = 1e6;
void set_bucket_mb(ClusterSpec& c, double mb, const std::string& where);

}  // namespace dtsim
