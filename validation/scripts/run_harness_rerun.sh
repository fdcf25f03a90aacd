#!/usr/bin/env bash
# Harness train runs on a 4-GPU node after a harness change (1, 2 and 4 GPUs), with PyTorch DDP runs of
# further models on the GPUs the harness leaves free, and one A/B run of the convolution workspace limit.
# Results under OUT (harness/, pytorch/, ab_ws1024/), packed into TAR after every phase.
# usage: validation/scripts/run_harness_rerun.sh OUT [TAR]
# HARNESS_ONLY=1: the harness runs alone (no PyTorch, no A/B run); 2 GPUs are enough then.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
out="${1:?usage: run_harness_rerun.sh OUT [TAR]}"
tar_out="${2:-}"
cd "$(dirname "$0")/../.."
H="validation/scripts/run_harness.sh"
PY="python3 validation/pytorch/ddp_reference.py"
mkdir -p "$out/harness" "$out/pytorch" "$out/ab_ws1024"
nvidia-smi -L > "$out/gpus.txt" 2>&1
ngpu=$(nvidia-smi -L | wc -l)
only="${HARNESS_ONLY:-0}"
(( ngpu >= 4 || (only == 1 && ngpu >= 2) )) || { echo "needs 4 GPUs (2 with HARNESS_ONLY=1)" >&2; exit 2; }
validation/scripts/run_harness.sh selftest > "$out/selftest.log" 2>&1 || { cat "$out/selftest.log"; echo "selftest failed" >&2; exit 1; }
tail -n 1 "$out/selftest.log"
HARGS="--model resnet50,alexnet,vgg16 --batch 16,32,64 --math fp32,bf16 --iters 20 --warmup 3 --profile-iters 1"
PARGS="--precisions fp32,bf16 --iters 20 --warmup 3"
pack() { [[ -n "$tar_out" ]] && tar czf "$tar_out.tmp" -C "$out" . && mv "$tar_out.tmp" "$tar_out"; }
summary() { grep -hE "median|skipped|error|Error" "$@" | cut -c1-150; }

# 1 GPU: harness on GPU 0; the old 1024 MiB workspace limit on GPU 1 (vgg16 b64 fp32), then PyTorch.
s=${PHASE_S_1:-200}
CUDA_VISIBLE_DEVICES=0 timeout "$s" $H train --out "$out/harness" --gpus 1 $HARGS > "$out/harness_1gpu.log" 2>&1 &
if [[ "$only" != 1 ]]; then
( CUDA_VISIBLE_DEVICES=1 timeout 60 $H train --out "$out/ab_ws1024" --gpus 1 --model vgg16 --batch 64 --math fp32 \
    --iters 20 --warmup 3 --profile-iters 1 --workspace-mib 1024 > "$out/ab_ws1024.log" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout $((s - 70)) $PY --out "$out/pytorch" --gpus 1 --configs "resnet18:16,64,128" $PARGS \
    --port 29521 > "$out/pytorch_1gpu_a.log" 2>&1 ) &
CUDA_VISIBLE_DEVICES=2 timeout "$s" $PY --out "$out/pytorch" --gpus 1 --configs "resnet101:16,64 vgg16:128" $PARGS \
  --port 29522 > "$out/pytorch_1gpu_b.log" 2>&1 &
CUDA_VISIBLE_DEVICES=3 timeout "$s" $PY --out "$out/pytorch" --gpus 1 --configs "inception_v3:32 mobilenet_v2:64,128" $PARGS \
  --port 29523 > "$out/pytorch_1gpu_c.log" 2>&1 &
fi
wait
summary "$out"/*.log; pack

# 2 GPUs: harness on GPUs 0,1 beside PyTorch on GPUs 2,3.
s=${PHASE_S_2:-120}
CUDA_VISIBLE_DEVICES=0,1 timeout "$s" $H train --out "$out/harness" --gpus 2 $HARGS > "$out/harness_2gpu.log" 2>&1 &
[[ "$only" != 1 ]] && CUDA_VISIBLE_DEVICES=2,3 timeout "$s" $PY --out "$out/pytorch" --gpus 2 --configs "resnet18:64 resnet101:32 mobilenet_v2:64" \
  $PARGS --port 29524 > "$out/pytorch_2gpu.log" 2>&1 &
wait
summary "$out/harness_2gpu.log" "$out/pytorch_2gpu.log"; pack

# 4 GPUs: harness alone.
(( ngpu >= 4 )) && timeout "${PHASE_S_4:-110}" $H train --out "$out/harness" --gpus 4 $HARGS > "$out/harness_4gpu.log" 2>&1
echo "harness 4 GPUs: exit $?"
summary "$out/harness_4gpu.log"; pack
exit 0
