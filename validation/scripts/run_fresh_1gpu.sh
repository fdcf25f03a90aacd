#!/usr/bin/env bash
# PyTorch DDP reference runs on one GPU, each configuration in a fresh process, so that nothing a
# previous configuration left behind (an extra FP32 parameter copy was measured after other
# configurations in one process: validation/data/h100-sxm/memory_phases.txt) is in its peak memory.
# usage: [CONFIGS="alexnet:16 ..."] [PYARGS=--sync-every-step] validation/scripts/run_fresh_1gpu.sh OUT [TAR] [SECONDS]
# (writes OUT/pytorch/*.json, OUT/log.txt)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
out="${1:?usage: run_fresh_1gpu.sh OUT [TAR] [SECONDS]}"
tar_out="${2:-}"
budget_s="${3:-400}"
cd "$(dirname "$0")/../.."
mkdir -p "$out/pytorch"
CONFIGS="${CONFIGS:-alexnet:16 alexnet:32 alexnet:64 vgg16:16 vgg16:32 vgg16:64 resnet50:16 resnet50:32 resnet50:64 mobilenet_v2:32 densenet121:32}"
t0=$SECONDS
for c in $CONFIGS; do
  for prec in fp32 bf16; do
    left=$((budget_s - (SECONDS - t0)))
    (( left > 20 )) || { echo "out of time before $c $prec" | tee -a "$out/log.txt"; break 2; }
    timeout "$left" python3 validation/pytorch/ddp_reference.py --out "$out/pytorch" --gpus 1 --configs "$c" \
      --precisions "$prec" --iters "${ITERS:-20}" --warmup 3 --port 29521 ${PYARGS:-} 2>&1 | grep -v Warning | tee -a "$out/log.txt"
  done
done
echo "fresh-process runs: $((SECONDS - t0)) s" | tee -a "$out/log.txt"
[[ -n "$tar_out" ]] && tar czf "$tar_out" -C "$out" .
exit 0
