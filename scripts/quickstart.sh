#!/usr/bin/env bash
# The main job: install and build as needed, then a scaling table of ResNet-50 on H100 nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
./build/dtsim sweep --model resnet50 --cluster h100-sxm --gpus 1..256:x2 --batch-per-gpu 32,128
