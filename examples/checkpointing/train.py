#!/usr/bin/env python3
"""A training loop that survives losing its machine: it checkpoints and resumes.

Cohort gives every attempt of a job the same COHORT_CHECKPOINT_DIR and a rising
COHORT_ATTEMPT. This script (PyTorch DistributedDataParallel, gloo, CPU) saves
the model, the optimizer and the step there every --checkpoint-every steps, and
at start resumes from the newest checkpoint, so a job requeued after a lost node
or a failure goes on where the last attempt left off instead of from step 0.

A checkpoint is written to a temporary file and renamed into place, so an
attempt killed mid-write leaves the previous checkpoint whole. Rank 0 writes;
every rank reads. The new file in COHORT_CHECKPOINT_DIR is itself a checkpoint
report to Cohort (a preemption then prefers jobs that lose less); the
"cohort-checkpoint" line printed after it makes the report reach the master at
once rather than on the agent's next sampling tick. Each attempt appends one
line to attempts.log in COHORT_OUTPUT_DIR ("attempt=2 start_step=40"), which is
how the integration test checks that the next attempt resumed; it is not kept in
the checkpoint directory, where every file written counts as a checkpoint.

Exit codes: 0 success, 2 bad arguments, 1 unexpected error.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100, help="steps in all")
    p.add_argument("--checkpoint-every", type=int, default=10, help="steps between checkpoints")
    p.add_argument("--step-seconds", type=float, default=0.1, help="sleep per step (a slow model)")
    args = p.parse_args()
    if args.steps < 1 or args.checkpoint_every < 1 or args.step_seconds < 0:
        p.error("--steps and --checkpoint-every must be positive, --step-seconds not negative")
    return args


def checkpoint_dir():
    d = os.environ.get("COHORT_CHECKPOINT_DIR")
    if not d:
        d = os.path.join(os.getcwd(), "checkpoints")  # run by hand, outside Cohort
    os.makedirs(d, exist_ok=True)
    return d


def output_dir():
    d = os.environ.get("COHORT_OUTPUT_DIR")
    if not d:
        d = os.path.join(os.getcwd(), "outputs")  # run by hand, outside Cohort
    os.makedirs(d, exist_ok=True)
    return d


def save(path, step, model, optimizer):
    tmp = f"{path}.tmp.{os.getpid()}"
    torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: a reader sees the old checkpoint or the new one


def main():
    args = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    attempt = int(os.environ.get("COHORT_ATTEMPT", "1"))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("gloo", rank=0, world_size=1)

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    ckpt = os.path.join(checkpoint_dir(), "checkpoint.pt")

    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt, map_location="cpu")
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    # Every rank must agree on where to start, or the collectives would not line up.
    agreed = torch.tensor([start])
    dist.broadcast(agreed, src=0)
    start = int(agreed.item())
    print(f"rank {rank}: attempt {attempt} starts at step {start}"
          f"{' (resumed from checkpoint)' if start else ''}", flush=True)
    if rank == 0:
        with open(os.path.join(output_dir(), "attempts.log"), "a") as f:
            f.write(f"attempt={attempt} start_step={start}\n")

    true_w = torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8
    generator = torch.Generator().manual_seed(rank)
    for step in range(start, args.steps):
        x = torch.randn(32, 8, generator=generator)
        loss = torch.nn.functional.mse_loss(model(x), x @ true_w)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(args.step_seconds)
        done = step + 1
        if rank == 0 and (done % args.checkpoint_every == 0 or done == args.steps):
            save(ckpt, done, model.module, optimizer)
            print(f"step {done}: loss {loss.item():.4f}, checkpoint saved", flush=True)
            print(f"cohort-checkpoint step={done} path={ckpt}", flush=True)
    dist.barrier()
    print(f"rank {rank}: finished {args.steps} steps", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except Exception:  # noqa: BLE001 - print the traceback, exit 1
        import traceback

        traceback.print_exc()
        sys.exit(1)
