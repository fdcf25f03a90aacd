"""One process per GPU on one host, for the PyTorch collective scripts (allreduce_sweep.py,
allreduce_beside_compute.py): their shared options, the spawn, and each rank's NCCL process group.
The environment (NCCL_*) is the caller's."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def add_rank_options(ap, samples, port):
    """--gpus, --samples and --port, with the script's own defaults."""
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--samples", type=int, default=samples)
    ap.add_argument("--port", type=int, default=port)


def emulate_node_of_rank(rank):
    """Nodes emulated on one host, as the harness does (validation/harness/util.hpp): with
    DTSIM_EMULATE_GPUS_PER_NODE=G, every G consecutive ranks get a host identity of their own
    (NCCL_HOSTID), so NCCL uses NVLink inside a node and its network transport between nodes. Before
    the process's first NCCL call. Returns G, or 0 when the variable is unset."""
    v = os.environ.get("DTSIM_EMULATE_GPUS_PER_NODE")
    if v is None:
        return 0
    if not v.isdigit() or not 1 <= int(v) <= 1024:
        raise SystemExit(f"DTSIM_EMULATE_GPUS_PER_NODE: a whole number of GPUs per node (1..1024), not '{v}'")
    g = int(v)
    os.environ["NCCL_HOSTID"] = f"{os.uname().nodename}-emulated-node-{rank // g}"
    return g


def init_rank(rank, a):
    """This rank's GPU and NCCL process group (a.gpus ranks, rendezvous on 127.0.0.1:a.port)."""
    emulate_node_of_rank(rank)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(a.port))
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=a.gpus, device_id=dev)
    return dev


def run_ranks(worker, a):
    """worker(rank, a) in a.gpus processes, until all return."""
    mp.spawn(worker, args=(a,), nprocs=a.gpus, join=True)
