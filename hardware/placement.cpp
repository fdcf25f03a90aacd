#include "hardware/placement.hpp"

namespace dtsim {

Placement node_placement(const Placement& where) {
  Placement node;
  node.gpus = node.gpus_per_node = where.local_gpus();
  node.nodes = 1;
  return node;
}

Placement one_per_node_placement(const Placement& where) {
  Placement rail;
  rail.gpus = rail.nodes = where.nodes;
  rail.gpus_per_node = 1;
  return rail;
}

}  // namespace dtsim
