#!/usr/bin/env bash
# More convolution shapes through cuDNN's graph API (as PyTorch runs them), mostly random and
# perturbed-zoo shapes: the predictors' held-out error is largest there (kernels_mlp/README.md) and
# the zoo's own layers are already measured at every batch size. One harness process per GPU, each
# with its own shape seed, side by side; each GPU's CSVs come back in one tar (the device tool
# returns at most 8 files). Merge with validation/scripts/merge_kernels.py, which keeps a shape's
# first measurement, so zoo shapes measured again are dropped.
# usage: validation/scripts/run_conv_shapes.sh OUT SECONDS [SEED_BASE]
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out="${1:?usage: run_conv_shapes.sh OUT SECONDS [SEED_BASE]}"
secs="${2:?usage: run_conv_shapes.sh OUT SECONDS [SEED_BASE]}"
seed_base="${3:-20}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
H="validation/scripts/run_harness.sh"
work=$(mktemp -d)
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
(( ngpu >= 1 )) || { echo "run_conv_shapes.sh: no GPU" >&2; exit 2; }
nvidia-smi -L > "$work/gpus.txt" 2>&1
for ((g = 0; g < ngpu; ++g)); do
  CUDA_VISIBLE_DEVICES=$g timeout $((secs + 30)) $H kernels --out "$work/kernels_gpu$g" --kinds conv2d \
    --conv-api graph --math fp32,bf16 --random-frac 0.97 --seed $((seed_base + g)) --budget-s "$secs" \
    --no-sanity > "$work/kernels_gpu$g.log" 2>&1 &
done
wait
grep -h "conv2d\|done" "$work"/kernels_gpu*.log
mkdir -p "$out"
tar czf "$out/conv_shapes.tgz" -C "$work" .
