// Plots: gnuplot draws real PNG and SVG files where it is installed; where it is not (or
// DTSIM_GNUPLOT points nowhere) the command exits 2 with one line and writes nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "report/plot.hpp"
#include "report/study_plots.hpp"
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

TEST_CASE("plots: the breakdown's rotated x labels stay inside the picture") {
  if (!have_gnuplot()) {
    WARN("gnuplot is not installed: plots not drawn");
    return;
  }
  study_test::TempDir tmp("labels");
  // Long labels (what-ifs vary) on few and on many bars.
  for (const std::string& sweep : {"--model resnet50 --gpus 1,8 --batch-per-gpu 32 --flops-scale 1,2 --nic-Gbps 100,400",
                                   "--model resnet50,vgg16 --gpus 1,8 --batch-per-gpu 32,64 --flops-scale 1,2 --nic-Gbps 100,400",
                                   "--model resnet18 --gpus 1..64:x2 --batch-per-gpu 16"}) {
    INFO(sweep);
    const std::string svg = tmp.path + "/b.svg";
    auto r = run_dtsim("sweep " + sweep + " --plot-breakdown " + svg + " --format csv");
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string s = slurp(svg);
    // gnuplot writes each tic label as <g transform="translate(X,Y) rotate(-50)" ... font-size="F"
    // text-anchor="end"><text>LABEL</text>: the label ends at X and runs left and down from there.
    int labels = 0;
    for (size_t at = s.find("rotate(-50)"); at != std::string::npos; at = s.find("rotate(-50)", at + 1)) {
      const size_t tr = s.rfind("translate(", at);
      const double x = std::stod(s.substr(tr + 10));
      const size_t fs = s.find("font-size=\"", at);
      const double font = std::stod(s.substr(fs + 11));
      const size_t t0 = s.find("<text>", at) + 6, t1 = s.find("</text>", t0);
      const std::string label = s.substr(t0, t1 - t0);
      // Sans averages under 0.6 em per character; the label reaches left by its length x cos 50.
      const double reach = label.size() * 0.6 * font * std::cos(50 * 3.14159265358979 / 180);
      INFO(label << " ends at x = " << x << ", reaches " << reach << " px left");
      CHECK(x - reach >= 0);
      ++labels;
    }
    CHECK(labels > 0);
  }
}

TEST_CASE("plots: every kernel kind has its own colour and point shape on the roofline") {
  // The styles themselves: no two kinds alike.
  std::set<std::string> colours;
  std::set<int> points;
  const int kinds = dtsim::kKernelKinds;
  for (int k = 0; k < kinds; ++k) {
    colours.insert(dtsim::kind_style(static_cast<dtsim::KernelKind>(k)).colour);
    points.insert(dtsim::kind_style(static_cast<dtsim::KernelKind>(k)).point_type);
  }
  CHECK(colours.size() == static_cast<size_t>(kinds));
  CHECK(points.size() == static_cast<size_t>(kinds));
  if (!have_gnuplot()) {
    WARN("gnuplot is not installed: plots not drawn");
    return;
  }
  // And as drawn: each plotted kind (a legend entry and its points) in a colour and symbol of its own.
  study_test::TempDir tmp("roofline_styles");
  const std::string svg = tmp.path + "/r.svg";
  auto r = run_dtsim("roofline --model resnet18 --batch-per-gpu 32 --plot " + svg);
  REQUIRE(r.code == 0);
  const std::string s = slurp(svg);
  std::map<std::string, std::pair<std::string, std::string>> drawn;  // kind -> (symbol, colour)
  for (size_t at = s.find("<g id=\"gnuplot_plot_"); at != std::string::npos;) {
    const size_t next = s.find("<g id=\"gnuplot_plot_", at + 1);
    const std::string block = s.substr(at, next == std::string::npos ? std::string::npos : next - at);
    at = next;
    const size_t t0 = block.find("<text>"), use = block.find("<use xlink:href='#");
    if (t0 == std::string::npos || use == std::string::npos) continue;  // a line, not points
    const std::string name = block.substr(t0 + 6, block.find("</text>", t0) - t0 - 6);
    const std::string symbol = block.substr(use + 18, block.find('\'', use + 18) - use - 18);
    const size_t c = block.find("color='", use);
    drawn[name] = {symbol, block.substr(c + 7, block.find('\'', c + 7) - c - 7)};
  }
  CHECK(drawn.count("conv2d"));
  CHECK(drawn.count("eltwise"));
  CHECK(drawn.size() >= 8);
  std::set<std::string> drawn_symbols, drawn_colours;
  for (const auto& [name, style] : drawn) {
    INFO(name << ": " << style.first << " in " << style.second);
    CHECK(drawn_symbols.insert(style.first).second);
    CHECK(drawn_colours.insert(style.second).second);
  }
}

TEST_CASE("plots: a sweep's efficiency axis spans its efficiencies, and the breakdown keeps every what-if") {
  if (!have_gnuplot()) {
    WARN("gnuplot is not installed: plots not drawn");
    return;
  }
  study_test::TempDir tmp("whatif_plots");
  // 8 what-ifs x 10 GPU counts: more bars than a breakdown draws, every efficiency above 98%.
  const std::string sweep = "sweep --model resnet50 --gpus 8..4096:x2 --batch-per-gpu 64 --cluster-nodes 512 --nic-Gbps 100,200,400,800 "
                            "--latency-scale 0.5,1 --format csv";
  auto r = run_dtsim(sweep + " --plot " + tmp.path + "/s.svg --plot-breakdown " + tmp.path + "/b.svg");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string s = slurp(tmp.path + "/s.svg");
  // A 0-100% axis put every series on one line near the top: its tics 0, 20, ... are gone, 99 is drawn.
  CHECK(s.find("<text>20</text>") == std::string::npos);
  CHECK(s.find("<text>99</text>") != std::string::npos);
  const std::string b = slurp(tmp.path + "/b.svg");
  // Every what-if keeps bars (before, only the first one did), at the smallest and the largest GPU count.
  for (const char* w : {"NIC 100 Gb/s", "NIC 800 Gb/s", "latency x0.5"}) {
    INFO(w);
    CHECK(b.find(w) != std::string::npos);
  }
  CHECK(b.find(", 8 GPUs:") != std::string::npos);
  CHECK(b.find(", 4096 GPUs:") != std::string::npos);
  // No blank band: the longest rotated label ends within 60 px of the picture's bottom edge.
  const size_t hs = b.find("height=\"");
  REQUIRE(hs != std::string::npos);
  const double height = std::stod(b.substr(hs + 8));
  double lowest = 0;
  for (size_t at = b.find("rotate(-50)"); at != std::string::npos; at = b.find("rotate(-50)", at + 1)) {
    const size_t tr = b.rfind("translate(", at);
    const size_t comma = b.find(',', tr);
    const double y = std::stod(b.substr(comma + 1));
    const size_t fs = b.find("font-size=\"", at);
    const double font = std::stod(b.substr(fs + 11));
    const size_t t0 = b.find("<text>", at) + 6, t1 = b.find("</text>", t0);
    lowest = std::max(lowest, y + (t1 - t0) * 0.6 * font * std::sin(50 * 3.14159265358979 / 180));
  }
  CHECK(lowest <= height);
  CHECK(lowest >= height - 60);
}
