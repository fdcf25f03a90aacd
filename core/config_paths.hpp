#pragma once
// Where dtsim finds its data at run time.
#include <string>

namespace dtsim {

// The folder holding configs/ (models/, clusters/, gpus/, frameworks/, ...): $DTSIM_CONFIG_DIR if
// set, else the source tree's configs/ recorded at build time.
std::string config_dir();

}  // namespace dtsim
