#pragma once
// Reading models: the documented JSON format (docs/model-format.md) and the built-in zoo.
#include <string>
#include <vector>

#include "common/json_util.hpp"
#include "model/graph.hpp"

namespace dtsim {

// The folder holding configs/ (models/, clusters/, gpus/): $DTSIM_CONFIG_DIR if set, else the
// source tree's configs/ recorded at build time.
std::string config_dir();

// Parses and shape-checks a model document; `what` names it in errors.
Graph parse_model(const Json& doc, const std::string& what);

// A zoo name (configs/models/NAME.json) or a path to a .json file.
Graph load_model(const std::string& name_or_path);

// Names of the built-in models, sorted.
std::vector<std::string> zoo_models();

}  // namespace dtsim
