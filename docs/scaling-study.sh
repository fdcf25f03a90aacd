#!/usr/bin/env bash
# Regenerates the worked study of docs/scaling-study.md: its tables (docs/study/*.txt, *.csv), its
# verdicts and its plots (docs/img/*.png). Needs a built dtsim (scripts/setup.sh) and gnuplot.
#   bash docs/scaling-study.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")/.."
dtsim=${1:-build/dtsim}
out=docs/study
img=docs/img
mkdir -p "$out" "$img"

# 1. ResNet-50 and VGG-16 on H100 nodes with InfiniBand, 1 to 4096 GPUs, batch 16 to 256 per GPU.
"$dtsim" sweep --sweep configs/sweeps/scaling-study.json \
  --plot "$img/scaling.png" --plot-breakdown "$img/breakdown.png" \
  --verdict "$out/scaling-verdict.txt" --format csv --out "$out/scaling.csv"

# 2. What links, latency and faster GPUs buy, at 64 samples per GPU.
"$dtsim" sweep --sweep configs/sweeps/link-whatif.json \
  --plot "$img/link-whatif.png" --verdict "$out/link-whatif-verdict.txt" --format csv --out "$out/link-whatif.csv"

# 3. The seed study's five axes (batch, FLOP/s, HBM bandwidth, network bandwidth, cluster size).
"$dtsim" sweep --sweep configs/sweeps/seed-study.json --verdict "$out/seed-verdict.txt" --format csv --out "$out/seed.csv"

# 4. Where the time goes inside one GPU, and one iteration on 256 GPUs as a trace.
"$dtsim" roofline --model resnet50 --cluster h100-sxm --batch-per-gpu 64 --plot "$img/roofline-resnet50.png" --out "$out/roofline-resnet50.txt"
"$dtsim" roofline --model vgg16 --cluster h100-sxm --batch-per-gpu 64 --plot "$img/roofline-vgg16.png" --out "$out/roofline-vgg16.txt"
"$dtsim" predict --model resnet50 --cluster h100-sxm --gpus 256 --batch-per-gpu 64 --algo auto \
  --dataset-size 1281167 --epochs 90 --trace "$out/resnet50-256gpus-trace.json" --out "$out/resnet50-256gpus.txt"
echo "scaling-study: wrote $out/ and $img/"
