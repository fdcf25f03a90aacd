#!/usr/bin/env bash
# Train-mode and collective measurement on one node of 4 (or 8) GPUs, in one call that fits the
# lent machine's 10-minute limit. Results under OUT, as run_train.sh writes them:
#   OUT/harness/*.json  OUT/pytorch/*.json  OUT/collective/*.json  OUT/kernels_gpu*/ (conv2d, graph API)
# and, after every phase, all of it again as TAR (the device tool brings back at most 8 files).
# usage: validation/scripts/run_node.sh OUT [TAR]
#   1 GPU  — harness then convolution kernels (cuDNN graph API, as PyTorch) on GPU 0, PyTorch on
#            GPU 1, convolution kernels on GPUs 2 and 3, each GPU its own shape seed, side by side;
#   2 GPUs — harness on GPUs 0,1 beside PyTorch on GPUs 2,3 (an NVSwitch gives each pair its own
#            links; both share the host's 64 CPU cores);
#   all GPUs — harness, PyTorch, then the collectives on 2 and all GPUs, one at a time.
# Each phase is time-boxed (PHASE_S_*); a run cut short keeps the configurations it finished.
# PyTorch configurations are resnet50/alexnet/vgg16 only: densenet121's cudnn.benchmark search
# outlasted a 170 s phase on 2 x H200.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
out="${1:?usage: run_node.sh OUT [TAR]}"
tar_out="${2:-}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
H="validation/scripts/run_harness.sh"
PY="python3 validation/pytorch/ddp_reference.py"
mkdir -p "$out/harness" "$out/pytorch"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi -L > "$out/gpus.txt" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
echo "run_node.sh on $ngpu GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
(( ngpu >= 4 )) || { echo "run_node.sh: needs 4 or more GPUs" >&2; exit 2; }

HARGS="--model ${MODELS:-resnet50,alexnet,vgg16} --batch ${BATCHES:-16,32,64} --math fp32,bf16 --iters ${ITERS:-20} --warmup 3 --profile-iters 1"
PARGS="--precisions fp32,bf16 --iters ${ITERS:-20} --warmup 3"
PYCONF="${PYCONF:-resnet50:16,32,64 alexnet:16,32,64 vgg16:16,32,64}"
summary() { grep -hE "median|skipped|error|Error" "$@" | cut -c1-160; }
pack() { [[ -n "$tar_out" ]] && tar czf "$tar_out.tmp" -C "$out" . && mv "$tar_out.tmp" "$tar_out"; }
conv() {  # conv kernels on one GPU: conv GPU SECONDS
  CUDA_VISIBLE_DEVICES=$1 timeout $(($2 + 20)) $H kernels --out "$out/kernels_gpu$1" --kinds conv2d --conv-api graph \
    --math fp32,bf16 --seed $((10 + $1)) --budget-s "$2" --no-sanity > "$out/kernels_gpu$1.log" 2>&1
}

# 1 GPU
s=${PHASE_S_1:-150}
t0=$SECONDS
( CUDA_VISIBLE_DEVICES=0 timeout "$s" $H train --out "$out/harness" --gpus 1 $HARGS > "$out/harness_1gpu.log" 2>&1
  left=$((s - (SECONDS - t0) - 25)); (( left > 30 )) && conv 0 "$left" ) &
CUDA_VISIBLE_DEVICES=1 timeout "$s" $PY --out "$out/pytorch" --gpus 1 --configs "$PYCONF" $PARGS --port 29511 \
  > "$out/pytorch_1gpu.log" 2>&1 &
conv 2 $((s - 25)) & conv 3 $((s - 25)) &
wait
summary "$out/harness_1gpu.log" "$out/pytorch_1gpu.log"; tail -qn 2 "$out"/kernels_gpu*.log; pack

# 2 GPUs
s=${PHASE_S_2:-100}
CUDA_VISIBLE_DEVICES=0,1 timeout "$s" $H train --out "$out/harness" --gpus 2 $HARGS > "$out/harness_2gpu.log" 2>&1 &
CUDA_VISIBLE_DEVICES=2,3 timeout "$s" $PY --out "$out/pytorch" --gpus 2 --configs "$PYCONF" $PARGS --port 29512 \
  > "$out/pytorch_2gpu.log" 2>&1 &
wait
summary "$out/harness_2gpu.log" "$out/pytorch_2gpu.log"; pack

# all GPUs
timeout "${PHASE_S_NH:-90}" $H train --out "$out/harness" --gpus "$ngpu" $HARGS > "$out/harness_${ngpu}gpu.log" 2>&1
echo "harness $ngpu GPUs: exit $?"; pack
timeout "${PHASE_S_NP:-120}" $PY --out "$out/pytorch" --gpus "$ngpu" --configs "$PYCONF" $PARGS --port 29513 \
  > "$out/pytorch_${ngpu}gpu.log" 2>&1
echo "pytorch $ngpu GPUs: exit $?"
summary "$out/harness_${ngpu}gpu.log" "$out/pytorch_${ngpu}gpu.log"; pack
timeout "${PHASE_S_C:-90}" $H collective --out "$out/collective" --gpus "2,$ngpu" \
  --ops allreduce,reducescatter,allgather,broadcast --samples 10 --warmup 3 > "$out/collective.log" 2>&1
echo "collective: exit $?"
cp "$out/topo.txt" "$out/collective/" 2>/dev/null
pack
exit 0
