#!/usr/bin/env bash
# A network-bound cluster emulated on one host: NCCL is forced onto TCP sockets over the
# loopback interface, so every GPU is a node of its own and every byte of an all-reduce crosses the
# "network" (the host's TCP stack). NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD set the emulated
# NIC's bandwidth. Results under OUT, one folder per setting (s<threads>x<socks>):
#   OUT/<setting>/collective/allreduce_<p>gpu.json   harness collective mode
#   OUT/<setting>/harness/*.json                      harness train, dp (and local SGD), measured-run JSON
#   OUT/<setting>/pytorch/*.json                      validation/pytorch/ddp_reference.py under the same NCCL
#   OUT/nvlink_1gpu/{harness,pytorch}/*.json          the 1-GPU baselines (no communication) for weak scaling
# usage: validation/scripts/run_emulated.sh OUT PHASES
#   PHASES: comma list of collective, harness, pytorch, baseline
# A setting <threads>x<socks>n<G> (e.g. 2x2n2) emulates nodes of G GPUs each: NCCL keeps NVLink inside a
# node (NCCL_HOSTID per group of G ranks, DTSIM_EMULATE_GPUS_PER_NODE) and sockets between nodes.
# Environment: SETTINGS ("1x1 2x2 4x4"), GPUS (all visible), MODELS, BATCHES, MATHS, PYCONF,
# TRAIN_SETTINGS (the settings the train phases run; default all), PHASE_S (per phase and setting; SIGKILL
# 10 s after it, for the whole process group, ranks included),
# HARNESS_EXTRA (more harness train options, e.g. --overlap on,off).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out="${1:?usage: run_emulated.sh OUT PHASES}"
phases=",${2:?usage: run_emulated.sh OUT PHASES},"
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
H="validation/scripts/run_harness.sh"
PY="python3 validation/pytorch/ddp_reference.py"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
gpus="${GPUS:-$ngpu}"
settings="${SETTINGS:-1x1 2x2 4x4}"
train_settings="${TRAIN_SETTINGS:-$settings}"
models="${MODELS:-alexnet,vgg16,resnet50,resnet18,mobilenet_v2,densenet121}"
batches="${BATCHES:-32}"
maths="${MATHS:-bf16}"
pyconf="${PYCONF:-alexnet:32 vgg16:32 resnet50:32 resnet18:32 mobilenet_v2:32}"
phase_s="${PHASE_S:-120}"
mkdir -p "$out"
nvidia-smi -L > "$out/gpus.txt" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
echo "run_emulated.sh on $ngpu GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1); settings $settings"

emulate() {  # $1 = <threads>x<socks>[n<G>]: the NCCL environment of one emulated network
  local sock="${1%n*}" g=1
  [[ "$1" == *n* ]] && g="${1#*n}"
  export NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
  export NCCL_SOCKET_NTHREADS="${sock%x*}" NCCL_NSOCKS_PERTHREAD="${sock#*x}"
  if (( g == 1 )); then  # every GPU a node of its own: nothing but sockets between any two GPUs
    export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
  else  # nodes of G GPUs: NVLink inside (the harness and ddp_reference.py set NCCL_HOSTID per rank)
    export DTSIM_EMULATE_GPUS_PER_NODE="$g"
  fi
  GPN="$g"
}

if [[ "$phases" == *,baseline,* ]]; then  # 1 GPU: no communication, NCCL untouched
  d="$out/nvlink_1gpu"; mkdir -p "$d/harness" "$d/pytorch"
  CUDA_VISIBLE_DEVICES=0 timeout -k 10 "$phase_s" $H train --out "$d/harness" --gpus 1 --model "$models" --batch "$batches" \
    --math "$maths" --iters 20 --warmup 3 --profile-iters 1 > "$d/harness.log" 2>&1 &
  p1=$!
  if (( ngpu >= 2 )); then
    CUDA_VISIBLE_DEVICES=1 timeout -k 10 "$phase_s" $PY --out "$d/pytorch" --gpus 1 --configs "$pyconf" --precisions "$maths" \
      --iters 20 --warmup 3 --port 29531 > "$d/pytorch.log" 2>&1
    echo "baseline pytorch: exit $?"
  fi
  wait $p1; echo "baseline harness: exit $?"
fi

for s in $settings; do
  d="$out/s$s"; mkdir -p "$d"
  (
    emulate "$s"
    if [[ "$phases" == *,collective,* ]]; then
      timeout -k 10 "$phase_s" $H collective --out "$d/collective" --gpus "$gpus" --ops allreduce --max-bytes 512M \
        --samples 8 --warmup 3 --timeout-s 60 > "$d/collective.log" 2>&1
      echo "s$s collective: exit $?"; grep -E "busbw|^ *[0-9]+ " "$d/collective.log" | tail -n 3
    fi
    [[ " $train_settings " == *" $s "* ]] || exit 0
    if [[ "$phases" == *,harness,* ]]; then
      timeout -k 10 "$phase_s" $H train --out "$d/harness" --gpus "$gpus" --model "$models" --batch "$batches" --math "$maths" \
        --iters 20 --warmup 3 --profile-iters 1 ${HARNESS_EXTRA:-} > "$d/harness.log" 2>&1
      echo "s$s harness: exit $?"; grep -E "median" "$d/harness.log" | cut -c1-160 | tail -n 12
    fi
    if [[ "$phases" == *,pytorch,* ]]; then
      timeout -k 10 "$phase_s" $PY --out "$d/pytorch" --gpus "$gpus" --gpus-per-node "$GPN" --configs "$pyconf" --precisions "$maths" \
        --iters 20 --warmup 3 --port 29533 > "$d/pytorch.log" 2>&1
      echo "s$s pytorch: exit $?"; grep -E "median|rror" "$d/pytorch.log" | cut -c1-160 | tail -n 12
      # A timed-out DDP run can leave spawned ranks behind in NCCL; on 4 x H200 a later call's runs all
      # hung after one did (validation/data/h200-sxm/emulated/gpu4_large/README.md).
      pkill -9 -f ddp_reference.py 2>/dev/null || true
    fi
  )
done
