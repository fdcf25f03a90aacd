#!/usr/bin/env bash
# Regenerates docs/accuracy.png (predicted vs measured iteration time) from the committed runs.
# Usage: bash docs/accuracy.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")/.."
DTSIM=${1:-build/dtsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$DTSIM" validate --measured validation/data/h100-sxm/runs --format csv > "$tmp/h100_harness.csv"
"$DTSIM" validate --measured validation/data/h100-sxm/pytorch --format csv > "$tmp/h100_pytorch.csv"
"$DTSIM" validate --measured validation/data/h200-sxm/runs --measured validation/data/h200-sxm/pytorch --format csv > "$tmp/h200.csv"
gnuplot <<GP
set terminal pngcairo size 900,700 font ",11"
set output "docs/accuracy.png"
set datafile separator ","
set logscale xy
set xlabel "measured iteration time (ms)"
set ylabel "predicted iteration time (ms)"
set title "dtsim vs measured (H100: harness and PyTorch DDP, 1-4 GPUs; H200: both, 1-2 GPUs)"
set key top left
set grid
f(x) = x
plot [1:200][1:200] \
  "$tmp/h100_harness.csv" every ::1 using 8:9 with points pt 7 ps 1.0 title "H100 dtsim-harness", \
  "$tmp/h100_pytorch.csv" every ::1 using 8:9 with points pt 5 ps 1.0 title "H100 PyTorch DDP", \
  "$tmp/h200.csv" every ::1 using 8:9 with points pt 9 ps 1.0 title "H200 (harness before its fix, PyTorch)", \
  f(x) with lines dt 1 lc "black" title "exact", \
  1.05*x with lines dt 3 lc "gray" title "+-5%", 0.95*x with lines dt 3 lc "gray" notitle, \
  1.15*x with lines dt 2 lc "gray" title "+-15%", 0.85*x with lines dt 2 lc "gray" notitle
GP
echo "wrote docs/accuracy.png"
