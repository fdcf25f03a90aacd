// core/registry.hpp: the one registry of named implementations (docs/design.md §8). Its order is what
// help texts and error messages list, so it must not depend on the order static initialisers ran in.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "compute/compute_model.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "hardware/gpu_spec.hpp"
#include "network/collective.hpp"
#include "sim/strategy.hpp"

using namespace dtsim;

namespace {

struct TestShape {
  virtual ~TestShape() = default;
  virtual double area() const = 0;
};
struct TestSquare : TestShape {
  explicit TestSquare(double s) : side(s) {}
  double side;
  double area() const override { return side * side; }
};
struct TestCircle : TestShape {
  explicit TestCircle(double r) : radius(r) {}
  double radius;
  double area() const override { return 3 * radius * radius; }
};
// A family of its own: the tests' registrations do not reach the program's registries.
using ShapeRegistry = Registry<TestShape, double>;

}  // namespace

TEST_CASE("a registry lists by rank, then by name, whatever order entries were added in") {
  ShapeRegistry r;
  r.add({"square", 1, "four equal sides", [](double s) -> std::unique_ptr<TestShape> { return std::make_unique<TestSquare>(s); }});
  r.add({"circle", 0, "round", [](double s) -> std::unique_ptr<TestShape> { return std::make_unique<TestCircle>(s); }});
  r.add({"disc", 0, "round too", [](double s) -> std::unique_ptr<TestShape> { return std::make_unique<TestCircle>(s); }});
  CHECK(r.names() == std::vector<std::string>{"circle", "disc", "square"});
  CHECK(r.joined_names() == "circle, disc, square");
  REQUIRE(r.find("square") != nullptr);
  CHECK(r.find("square")->help == "four equal sides");
  CHECK(r.find("triangle") == nullptr);
  auto sq = r.make("square", 3.0);
  REQUIRE(sq);
  CHECK(sq->area() == 9.0);
  CHECK(r.make("triangle", 3.0) == nullptr);
}

TEST_CASE("compute models are registered from their impl/ files, in the order users know") {
  // Registered in compute/impl/mlp (auto, mlp) and compute/impl/roofline (roofline): present only
  // if the layers are linked whole.
  CHECK(ComputeModelRegistry::get().names() == std::vector<std::string>{"auto", "mlp", "roofline"});
  for (const auto& e : ComputeModelRegistry::get().entries()) CHECK_FALSE(e.help.empty());
  const GpuSpec gpu = load_gpu("h100-sxm");
  CHECK(make_compute_model("roofline", gpu)->name() == "roofline");
  try {
    make_compute_model("guess", gpu);
    FAIL("an unknown compute model was accepted");
  } catch (const InputError& e) {
    CHECK(e.where() == "--compute-model");
    CHECK(std::string(e.what()).find("(auto, mlp, roofline)") != std::string::npos);
  }
}

TEST_CASE("collective algorithms and strategies are registered from their impl/ files, in the order users know") {
  CHECK(collective_algorithm_names() == std::vector<std::string>{"auto", "nccl-ring", "nccl-tree", "ring", "tree", "recursive-doubling",
                                                                 "rabenseifner", "hierarchical", "mpi", "ps"});
  for (const auto& e : CollectiveAlgorithmRegistry::get().entries()) CHECK_FALSE(e.help.empty());
  CHECK(strategy_names() == std::vector<std::string>{"dp", "hierarchical", "daso", "easgd-sync", "easgd-async", "measgd-async",
                                                     "hogwild-easgd", "ps", "grid", "hierarchical-leader", "local-sgd", "fsdp",
                                                     "zero1", "zero2", "zero3"});
  for (const auto& e : StrategyRegistry::get().entries()) CHECK_FALSE(e.help.empty());
}
