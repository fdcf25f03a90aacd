#pragma once
// Where dtsim finds its data at run time.
#include <string>
#include <vector>

namespace dtsim {

// The folder holding configs/ (models/, clusters/, gpus/, frameworks/, ...): $DTSIM_CONFIG_DIR if
// set, else the source tree's configs/ recorded at build time.
std::string config_dir();

// The presets of one kind: the names of config_dir()/FOLDER/*.json ("models", "clusters",
// "frameworks", ...), sorted; empty where the folder cannot be read.
std::vector<std::string> config_presets(const std::string& folder);

}  // namespace dtsim
