#!/usr/bin/env bash
# The whole train-mode measurement on one GPU machine, in one go: harness train runs and the
# PyTorch DDP reference runs on 1 GPU and (when there are two or more) 2 GPUs, fp32 and bf16,
# then the NCCL collective sweep on 2 GPUs (COLLECTIVE=1). Results under OUT:
#   OUT/harness/*.json   (dtsim-harness train: <model>_b<batch>_<gpus>gpu_<precision>.json)
#   OUT/pytorch/*.json   (validation/pytorch/ddp_reference.py, same schema, framework "pytorch")
#   OUT/collective/      (collective mode, when asked for)
#   OUT/*.log
# usage: validation/scripts/run_train.sh OUT [full|smoke]
# With two GPUs the 1-GPU harness runs (GPU 0) and the 1-GPU PyTorch runs (GPU 1) go side by side;
# the 2-GPU runs follow, one at a time. Each phase is time-boxed (PHASE_S_*; a run cut short keeps
# the configurations it finished: one JSON per configuration).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
out="${1:?usage: run_train.sh OUT [full|smoke]}"
what="${2:-full}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
H="validation/scripts/run_harness.sh"
PY="python3 validation/pytorch/ddp_reference.py"
mkdir -p "$out/harness" "$out/pytorch"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi -L > "$out/gpus.txt" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
echo "run_train.sh $what on $ngpu GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"

if [[ "$what" == smoke ]]; then
  timeout "${PHASE_S_SMOKE:-100}" $H train --out "$out/harness" --gpus 1 --model resnet50,alexnet --batch 8 \
    --math fp32,bf16 --iters 20 --warmup 3 --profile-iters 1 2>&1 | tee "$out/harness_smoke.log"
  CUDA_VISIBLE_DEVICES=0 timeout "${PHASE_S_SMOKE_PY:-60}" $PY --out "$out/pytorch" --gpus 1 \
    --configs "resnet50:16" --precisions fp32 --iters 20 --warmup 4 2>&1 | tee "$out/pytorch_smoke.log"
  exit 0
fi

MODELS="${MODELS:-resnet50,alexnet,vgg16}"
BATCHES="${BATCHES:-16,32,64}"
PYCONF="${PYCONF:-resnet50:16,32,64 alexnet:16,32,64 densenet121:8,32 mobilenet_v2:8,32 vgg16:16,32,64}"
HARGS="--model $MODELS --batch $BATCHES --math fp32,bf16 --iters ${ITERS:-20} --warmup 3 --profile-iters 1"
PARGS="--precisions fp32,bf16 --iters ${ITERS:-20} --warmup 3"

# phase 1: 1 GPU (harness on GPU 0, PyTorch on GPU 1 side by side when there are two GPUs)
if (( ngpu >= 2 )); then
  CUDA_VISIBLE_DEVICES=0 timeout "${PHASE_S_1:-170}" $H train --out "$out/harness" --gpus 1 $HARGS \
    > "$out/harness_1gpu.log" 2>&1 &
  p1=$!
  CUDA_VISIBLE_DEVICES=1 timeout "${PHASE_S_1:-170}" $PY --out "$out/pytorch" --gpus 1 --configs "$PYCONF" $PARGS \
    --port 29511 > "$out/pytorch_1gpu.log" 2>&1 &
  p2=$!
  wait $p1; echo "harness 1 GPU: exit $?"; wait $p2; echo "pytorch 1 GPU: exit $?"
else
  timeout "${PHASE_S_1:-170}" $H train --out "$out/harness" --gpus 1 $HARGS > "$out/harness_1gpu.log" 2>&1
  echo "harness 1 GPU: exit $?"
  timeout "${PHASE_S_1:-170}" $PY --out "$out/pytorch" --gpus 1 --configs "$PYCONF" $PARGS > "$out/pytorch_1gpu.log" 2>&1
  echo "pytorch 1 GPU: exit $?"
fi
cat "$out/harness_1gpu.log" "$out/pytorch_1gpu.log" | grep -E "median|skipped|error|Error" | cut -c1-200

# phase 2: 2 GPUs
if (( ngpu >= 2 )); then
  timeout "${PHASE_S_2H:-110}" $H train --out "$out/harness" --gpus 2 $HARGS > "$out/harness_2gpu.log" 2>&1
  echo "harness 2 GPUs: exit $?"
  timeout "${PHASE_S_2P:-135}" $PY --out "$out/pytorch" --gpus 2 --configs "$PYCONF" $PARGS --port 29512 \
    > "$out/pytorch_2gpu.log" 2>&1
  echo "pytorch 2 GPUs: exit $?"
  cat "$out/harness_2gpu.log" "$out/pytorch_2gpu.log" | grep -E "median|skipped|error|Error" | cut -c1-200
  if [[ "${COLLECTIVE:-0}" == 1 ]]; then
    timeout "${PHASE_S_C:-35}" $H collective --out "$out/collective" --gpus 2 --ops allreduce,reducescatter,allgather,broadcast \
      --samples 10 --warmup 3 > "$out/collective.log" 2>&1
    echo "collective: exit $?"
    cp "$out/topo.txt" "$out/collective/" 2>/dev/null
  fi
fi
exit 0
