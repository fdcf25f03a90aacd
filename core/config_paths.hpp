#pragma once
// Where dtsim finds its data at run time.
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

// The folder holding configs/ (models/, clusters/, gpus/, frameworks/, ...): $DTSIM_CONFIG_DIR if
// set, else the source tree's configs/ recorded at build time.
std::string config_dir();

// The presets of one kind: the names of config_dir()/FOLDER/*.json ("models", "clusters",
// "frameworks", ...), sorted; empty where the folder cannot be read.
std::vector<std::string> config_presets(const std::string& folder);
// config_dir()/FOLDER/NAME.json where that file exists; nullopt for a name no preset has (a name too
// long for a file name included), so that the caller names its flag and the presets in the error.
std::optional<std::string> config_preset_file(const std::string& folder, const std::string& name);
// "a, b, c": the presets of FOLDER, for those errors.
std::string config_preset_list(const std::string& folder);

}  // namespace dtsim
