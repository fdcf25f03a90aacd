// Plots: gnuplot draws real PNG and SVG files where it is installed; where it is not (or
// DTSIM_GNUPLOT points nowhere) the command exits 2 with one line and writes nothing.
#include <catch2/catch.hpp>

#include <filesystem>

#include "common/error.hpp"
#include "common/plot.hpp"
#include "study_cli.hpp"

using study_test::run_dtsim;
using study_test::lines;
using study_test::slurp;
namespace fs = std::filesystem;

static bool have_gnuplot() {
  try {
    dtsim::find_gnuplot("--plot");
    return true;
  } catch (const dtsim::InputError&) {
    return false;
  }
}

static bool is_png(const std::string& path) {
  std::string head = slurp(path).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

static bool is_svg(const std::string& path) {
  std::string s = slurp(path);
  return s.find("<svg") != std::string::npos && s.find("</svg>") != std::string::npos;
}

// Nothing but the files we asked for: no temporary renderings left behind.
static int entries(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) (void)e, ++n;
  return n;
}

TEST_CASE("plots: sweep, breakdown and roofline pictures are drawn") {
  if (!have_gnuplot()) {
    WARN("gnuplot is not installed: plots not drawn (the error path is still checked below)");
    return;
  }
  study_test::TempDir tmp("plots");
  auto r = run_dtsim("sweep --model resnet18,vgg11 --gpus 1..256:x4 --batch-per-gpu 16,2048 --plot " + tmp.path + "/scaling.png --plot-breakdown " + tmp.path +
                 "/breakdown.svg --format csv");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(is_png(tmp.path + "/scaling.png"));
  CHECK(is_svg(tmp.path + "/breakdown.svg"));
  // vgg11 at batch 2048 does not fit: it is marked in the plot (a legend entry) and the table.
  CHECK(r.out.find(",false") != std::string::npos);

  r = run_dtsim("sweep --model resnet18 --gpus 1,8 --batch-per-gpu 16 --inter-node-bandwidth-scale 1,2 --plot " + tmp.path + "/whatif.svg --format csv");
  REQUIRE(r.code == 0);
  CHECK(is_svg(tmp.path + "/whatif.svg"));
  CHECK(slurp(tmp.path + "/whatif.svg").find("inter-node bw x2") != std::string::npos);

  r = run_dtsim("roofline --model resnet50 --cluster h100-sxm --batch-per-gpu 64 --plot " + tmp.path + "/roofline.png");
  REQUIRE(r.code == 0);
  CHECK(is_png(tmp.path + "/roofline.png"));
  CHECK(r.out.find("conv2d") != std::string::npos);
  CHECK(entries(tmp.path) == 4);
}

TEST_CASE("plots: without gnuplot, exit 2 with one line and nothing written") {
  study_test::TempDir tmp("noplot");
  const std::string env = "DTSIM_GNUPLOT=" + tmp.path + "/no-such-gnuplot";
  for (const std::string& args : {"sweep --model resnet18 --gpus 1,2 --batch-per-gpu 8 --plot " + tmp.path + "/a.png --out " + tmp.path + "/out.txt",
                                  "sweep --model resnet18 --gpus 1,2 --batch-per-gpu 8 --plot-breakdown " + tmp.path + "/b.svg",
                                  "roofline --model resnet18 --batch-per-gpu 8 --plot " + tmp.path + "/r.png --out " + tmp.path + "/out.txt"}) {
    INFO(args);
    auto r = run_dtsim(args, env);
    CHECK(r.code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find("gnuplot is not installed") != std::string::npos);
    CHECK(r.out.empty());
  }
  CHECK(entries(tmp.path) == 0);
  // A name gnuplot cannot draw to is refused before anything runs.
  auto r = run_dtsim("sweep --model resnet18 --gpus 1 --batch-per-gpu 8 --plot " + tmp.path + "/a.pdf");
  CHECK(r.code == 2);
  CHECK(r.err.find("must end in .png or .svg") != std::string::npos);
  r = run_dtsim("sweep --model resnet18 --gpus 1 --batch-per-gpu 8 --plot " + tmp.path + "/no/such/dir/a.png");
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(entries(tmp.path) == 0);
}
