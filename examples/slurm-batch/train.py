"""Data-parallel training of a small model, one process per Slurm task.

Started by `srun` in train.sbatch: every process finds its place from Slurm's variables
(SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID) and the rendezvous from MASTER_ADDR and
MASTER_PORT, which the batch script set from `scontrol show hostnames`. Gloo on CPUs, so that it
runs anywhere; on GPUs, use "nccl" and the device of SLURM_LOCALID.
"""
import argparse
import os
import socket

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()

rank = int(os.environ["SLURM_PROCID"])
world = int(os.environ["SLURM_NTASKS"])
local = int(os.environ["SLURM_LOCALID"])
node = int(os.environ["SLURM_NODEID"])
dist.init_process_group(
    "gloo",
    init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
    rank=rank,
    world_size=world,
)

torch.manual_seed(0)  # the same model everywhere; DDP checks it
model = DistributedDataParallel(torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
generator = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
true_weights = torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8
for step in range(args.steps):
    x = torch.randn(64, 8, generator=generator)
    loss = torch.nn.functional.mse_loss(model(x), x @ true_weights)
    optimizer.zero_grad()
    loss.backward()  # gradients averaged over every rank
    optimizer.step()

# Every replica must hold the same weights: the sum of their differences from rank 0's is zero.
weights = torch.cat([p.detach().flatten() for p in model.parameters()])
reference = weights.clone()
dist.broadcast(reference, src=0)
drift = torch.tensor([float((weights - reference).abs().sum())])
dist.all_reduce(drift)
ranks = torch.tensor([float(rank + 1)])
dist.all_reduce(ranks)
expected = world * (world + 1) / 2
ok = drift.item() == 0.0 and ranks.item() == expected
print(f"rank {rank}/{world} on {socket.gethostname()} (node {node}, local {local}, "
      f"GPUs {os.environ.get('CUDA_VISIBLE_DEVICES', '')}): loss {loss.item():.4f}, "
      f"replicas {'in step' if drift.item() == 0.0 else 'DIVERGED'}, "
      f"rank sum {ranks.item():.0f}, {'ok' if ok else 'WRONG'}", flush=True)
dist.destroy_process_group()
raise SystemExit(0 if ok else 1)
