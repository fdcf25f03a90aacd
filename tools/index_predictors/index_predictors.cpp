// dtsim-index-predictors DIR OUT: writes the binary index of a predictor folder (what its manifest.json
// holds that a prediction reads, see compute/impl/mlp/mlp.hpp), so that a cold dtsim process skips
// parsing the JSON. The build runs it for every shipped GPU; an index of an older manifest is ignored.
#include <iostream>

#include "compute/impl/mlp/mlp.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dtsim-index-predictors PREDICTOR_DIR INDEX_FILE\n";
    return 2;
  }
  try {
    dtsim::mlp::write_predictor_index(argv[1], argv[2]);
  } catch (const dtsim::InputError& e) {
    std::cerr << "dtsim-index-predictors: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
