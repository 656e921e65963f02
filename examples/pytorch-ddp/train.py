#!/usr/bin/env python3
"""Minimal PyTorch DistributedDataParallel example for Cohort.

Trains a 2-layer MLP on a synthetic regression problem (the same true weights
on every rank, a different data shard per rank) and checks, while it trains,
that DDP really averaged the gradients across ranks:

  1. every parameter's gradient equals the cross-rank mean of itself
     (all_reduce SUM / world_size of a copy == local gradient);
  2. the DDP gradient equals an independently computed average: each rank
     runs a plain (non-DDP) copy of the model on its own shard, and those
     unsynchronised gradients are all_reduced and divided by world_size;
  3. after the optimizer step all ranks hold identical parameters.

Rendezvous comes from the environment Cohort injects (framework: pytorch):
MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE.
Without WORLD_SIZE and RANK the script runs as one process, still through
DDP, on a free localhost port.

Exit codes:
  0  success
  2  bad arguments or an incomplete rendezvous environment
  3  gradient / parameter check failed (names the parameter and the difference)
  4  the loss did not go down (final loss >= first loss) or became inf/nan
  5  deliberate failure requested with --fail-on-rank (on that rank)
  6  rendezvous or collective failed (peer died, timeout, unreachable master)
  1  unexpected error (a traceback is printed)
"""

import argparse
import copy
import datetime
import json
import math
import os
import socket
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_GRAD_CHECK = 3
EXIT_LOSS = 4
EXIT_INJECTED = 5
EXIT_COMM = 6

FAIL_AT_STEP = 5  # --fail-on-rank fails at this step
IN_FEATURES = 16
SAMPLES_PER_RANK = 1024

# Tolerances of the checks. DDP divides before it sums, the reference sums
# before it divides, so the two differ by float32 rounding only.
GRAD_ATOL = 1e-6
GRAD_RTOL = 1e-5
PARAM_ATOL = 1e-6


def log(rank, msg):
    print(f"[rank {rank}] {msg}", file=sys.stderr, flush=True)


def die(rank, code, msg):
    """Exit at once, without tearing down the process group.

    Used after a failure, when destroy_process_group() or interpreter shutdown
    could block on peers that are gone or stuck.
    """
    log(rank, msg)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a small MLP with DistributedDataParallel and check "
        "that gradients are averaged across ranks.",
        epilog="Rendezvous: MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, "
        "LOCAL_WORLD_SIZE (as injected by Cohort for framework: pytorch). "
        "Without WORLD_SIZE and RANK it runs as a single process. Optional outputs: "
        "$COHORT_OUTPUT_DIR/model.pt and $COHORT_OUTPUT_DIR/metrics.jsonl (rank 0). "
        "Exit codes: 0 ok, 2 usage, 3 gradient check failed, 4 loss did not go down, "
        "5 --fail-on-rank, 6 rendezvous/collective failure.",
    )
    p.add_argument("--steps", type=int, default=50, help="training steps (default 50)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="per-rank batch size (default 32)")
    p.add_argument("--lr", type=float, default=0.05,
                   help="SGD learning rate (default 0.05, momentum 0.9)")
    p.add_argument("--hidden", type=int, default=64, help="hidden width (default 64)")
    p.add_argument("--seed", type=int, default=1234,
                   help="seed of the true weights, the init and the data (default 1234)")
    p.add_argument("--check-every", type=int, default=1,
                   help="run the gradient/parameter checks every N steps (and at the "
                   "first and last); 0 disables them (default 1: every step)")
    p.add_argument("--fail-on-rank", type=int, default=None, metavar="R",
                   help=f"exit with code {EXIT_INJECTED} on rank R at step {FAIL_AT_STEP} "
                   "(to test gang failure)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds before a stuck rendezvous or collective fails (default 60)")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be >= 1")
    if args.batch_size < 1:
        p.error("--batch-size must be >= 1")
    if args.hidden < 1:
        p.error("--hidden must be >= 1")
    if args.check_every < 0:
        p.error("--check-every must be >= 0")
    if args.timeout <= 0:
        p.error("--timeout must be > 0")
    return args


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_env():
    """Return (world_size, rank, local_rank, local_world_size, single_process)."""
    env = os.environ
    have_ws, have_rank = "WORLD_SIZE" in env, "RANK" in env
    if not have_ws and not have_rank:
        # Standalone: one process, rendezvous with itself on a free port.
        env["MASTER_ADDR"] = "127.0.0.1"
        env["MASTER_PORT"] = str(free_port())
        env["WORLD_SIZE"] = "1"
        env["RANK"] = "0"
        env.setdefault("LOCAL_RANK", "0")
        env.setdefault("LOCAL_WORLD_SIZE", "1")
        single = True
    elif have_ws != have_rank:
        raise ValueError("WORLD_SIZE and RANK must be set together (or neither, "
                         "to run as a single process)")
    else:
        single = False
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not env.get(v)]
        if missing:
            raise ValueError(f"{', '.join(missing)} not set (WORLD_SIZE and RANK are)")
    try:
        world_size = int(env["WORLD_SIZE"])
        rank = int(env["RANK"])
        local_rank = int(env.get("LOCAL_RANK", "0"))
        local_world_size = int(env.get("LOCAL_WORLD_SIZE", "1"))
        int(env["MASTER_PORT"])
    except ValueError as e:
        raise ValueError(f"bad rendezvous variable: {e}") from None
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= RANK < WORLD_SIZE, got RANK={rank} WORLD_SIZE={world_size}")
    if local_rank < 0:
        raise ValueError(f"LOCAL_RANK must be >= 0, got {local_rank}")
    return world_size, rank, local_rank, local_world_size, single


def pick_device(local_rank):
    """nccl on the GPU for LOCAL_RANK when CUDA works, gloo on CPU otherwise.

    CUDA_VISIBLE_DEVICES may name GPUs that do not exist (e.g. on a CPU-only
    node managed with a fake NVML); torch.cuda.is_available() is then False.
    """
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        index = local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        return "nccl", torch.device("cuda", index)
    return "gloo", torch.device("cpu")


def make_data(seed, rank, device):
    """This rank's shard of a synthetic regression problem.

    The true weights come from `seed` alone, so every rank learns the same
    function; the inputs and noise come from (seed, rank), so shards differ.
    """
    g = torch.Generator().manual_seed(seed)
    w_true = torch.randn(IN_FEATURES, 1, generator=g)
    v_true = torch.randn(IN_FEATURES, 1, generator=g)
    g = torch.Generator().manual_seed(seed * 1000 + 1 + rank)
    x = torch.randn(SAMPLES_PER_RANK, IN_FEATURES, generator=g)
    y = x @ w_true + 0.5 * torch.sin(x @ v_true) + 0.01 * torch.randn(
        SAMPLES_PER_RANK, 1, generator=g)
    return x.to(device), y.to(device)


def make_model(hidden, seed):
    torch.manual_seed(seed)  # same init everywhere (DDP broadcasts rank 0's anyway)
    return nn.Sequential(nn.Linear(IN_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, 1))


def close(a, b, atol, rtol):
    """(all elements close, max abs difference). inf/nan only match themselves."""
    ok = bool(torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).all())
    diff = (a - b).abs()
    diff = diff[torch.isfinite(diff)]
    return ok, float(diff.max()) if diff.numel() else 0.0


def check_gradients(ddp_model, ref_model, loss_fn, x, y, world_size, rank):
    """Checks 1 and 2. Returns a list of error strings (empty when all is well).

    Must be called after the DDP backward() and before optimizer.step(), on
    every rank at the same step (it runs collectives).
    """
    errors = []
    named = list(ddp_model.module.named_parameters())

    # 1. The DDP gradient is the same on every rank: its cross-rank mean is itself.
    for name, p in named:
        mean = p.grad.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM)
        mean /= world_size
        ok, diff = close(p.grad, mean, GRAD_ATOL, GRAD_RTOL)
        if not ok:
            errors.append(f"gradient of {name} differs from its cross-rank mean "
                          f"(max abs diff {diff:.3e})")

    # 2. The DDP gradient equals the mean of the ranks' unsynchronised gradients,
    #    computed here with a plain copy of the model holding the same weights.
    with torch.no_grad():
        for p_ref, (_, p) in zip(ref_model.parameters(), named):
            p_ref.copy_(p)
    ref_model.zero_grad(set_to_none=True)
    loss_fn(ref_model(x), y).backward()
    for (name, p), p_ref in zip(named, ref_model.parameters()):
        expected = p_ref.grad.detach().clone()
        dist.all_reduce(expected, op=dist.ReduceOp.SUM)
        expected /= world_size
        ok, diff = close(p.grad, expected, GRAD_ATOL, GRAD_RTOL)
        if not ok:
            errors.append(f"gradient of {name} is not the average of the ranks' local "
                          f"gradients (max abs diff {diff:.3e})")
    return errors


def check_params_identical(ddp_model, world_size):
    """Check 3: after the optimizer step every rank holds rank 0's parameters."""
    named = list(ddp_model.module.named_parameters())
    flat = torch.cat([p.detach().reshape(-1) for _, p in named])
    gathered = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    errors = []
    for r in range(1, world_size):
        offset = 0
        for name, p in named:
            n = p.numel()
            diff = float((gathered[r][offset:offset + n] - gathered[0][offset:offset + n])
                         .abs().max())
            if diff > PARAM_ATOL:
                errors.append(f"parameter {name} on rank {r} differs from rank 0 after "
                              f"the optimizer step (max abs diff {diff:.3e})")
            offset += n
    return errors


def any_rank(flag, device):
    """True on every rank if `flag` is true on at least one."""
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def train(args, world_size, rank, backend, device):
    x_all, y_all = make_data(args.seed, rank, device)
    net = make_model(args.hidden, args.seed).to(device)
    ref = copy.deepcopy(net)  # plain, never synchronised: the reference for check 2
    model = DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.MSELoss()
    checks_run = 0
    history = []  # (step, mean loss over ranks, per-rank losses, checked, seconds)
    t0 = time.monotonic()

    for step in range(1, args.steps + 1):
        if args.fail_on_rank == rank and step == FAIL_AT_STEP:
            die(rank, EXIT_INJECTED,
                f"--fail-on-rank {rank}: failing deliberately at step {step}")

        lo = ((step - 1) * args.batch_size) % SAMPLES_PER_RANK
        idx = torch.arange(lo, lo + args.batch_size, device=device) % SAMPLES_PER_RANK
        x, y = x_all[idx], y_all[idx]

        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP all-reduces (averages) the gradients here

        local_loss = loss.detach().reshape(1)
        losses = [torch.empty_like(local_loss) for _ in range(world_size)]
        dist.all_gather(losses, local_loss)
        rank_losses = [float(l.item()) for l in losses]
        print(f"step {step} rank {rank} loss {rank_losses[rank]:.6f}", flush=True)
        if not all(math.isfinite(l) for l in rank_losses):  # same verdict on every rank
            die(rank, EXIT_LOSS, f"loss diverged at step {step}: rank losses {rank_losses} "
                f"(try a smaller --lr)")

        check = args.check_every > 0 and (step % args.check_every == 0 or step == 1
                                          or step == args.steps)
        errors = []
        if check:
            errors = check_gradients(model, ref, loss_fn, x, y, world_size, rank)

        opt.step()

        if check:
            errors += check_params_identical(model, world_size)
            checks_run += 1
            failed_anywhere = any_rank(bool(errors), device)
            for e in errors:
                log(rank, f"ERROR at step {step}: {e}")
            if failed_anywhere:
                if not errors:
                    log(rank, f"ERROR at step {step}: gradient check failed on another rank")
                die(rank, EXIT_GRAD_CHECK, f"gradient check failed at step {step}, exiting "
                    f"with {EXIT_GRAD_CHECK}")

        history.append((step, sum(rank_losses) / world_size, rank_losses, check,
                        time.monotonic() - t0))

    elapsed = time.monotonic() - t0
    first_loss, final_loss = history[0][1], history[-1][1]  # means over ranks: same everywhere
    grads = "ok" if checks_run else "skipped"
    result = {
        "type": "summary", "world_size": world_size, "backend": backend,
        "steps": args.steps, "first_loss": first_loss, "final_loss": final_loss,
        "grads_averaged": grads, "checks_run": checks_run, "train_seconds": elapsed,
    }

    if rank == 0:
        write_outputs(model, args, history, result)
    dist.barrier()  # nobody leaves (and drops rank 0's store) while others still work

    if not final_loss < first_loss:
        die(rank, EXIT_LOSS, f"loss did not go down: first {first_loss:.6f}, "
            f"final {final_loss:.6f}")
    if rank == 0:
        print(f"done: world_size={world_size} backend={backend} steps={args.steps} "
              f"first_loss={first_loss:.6f} final_loss={final_loss:.6f} "
              f"grads_averaged={grads}", flush=True)


def write_outputs(model, args, history, summary):
    # The trained model is a result, not a checkpoint to resume from: it goes with the outputs,
    # which outlive the job in the store (docs/data.md, "Outputs").
    out_dir = os.environ.get("COHORT_OUTPUT_DIR")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "model.pt")
        state = {k: v.detach().cpu() for k, v in model.module.state_dict().items()}
        torch.save({"model": state, "step": args.steps, "hidden": args.hidden,
                    "in_features": IN_FEATURES}, path + ".tmp")
        os.replace(path + ".tmp", path)
        path = os.path.join(out_dir, "metrics.jsonl")
        with open(path + ".tmp", "w") as f:
            for step, mean, rank_losses, checked, t in history:
                f.write(json.dumps({"type": "step", "step": step, "loss": mean,
                                    "rank_losses": rank_losses, "checked": checked,
                                    "time_s": round(t, 6)}) + "\n")
            f.write(json.dumps(summary) + "\n")
        os.replace(path + ".tmp", path)


def main(argv=None):
    args = parse_args(argv)
    try:
        world_size, rank, local_rank, local_world_size, single = read_env()
    except ValueError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.fail_on_rank is not None and not 0 <= args.fail_on_rank < world_size:
        log(rank, f"warning: --fail-on-rank {args.fail_on_rank} is not a rank of "
            f"this job (world size {world_size}); nothing will fail")
    if args.fail_on_rank is not None and args.steps < FAIL_AT_STEP:
        log(rank, f"warning: --fail-on-rank fails at step {FAIL_AT_STEP} but --steps "
            f"is {args.steps}; nothing will fail")

    # A tiny model: extra intra-op threads only contend when several ranks share
    # a machine. Respect an explicit OMP_NUM_THREADS.
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)
    # Make NCCL honour the timeout too (gloo always does).
    os.environ.setdefault("NCCL_ASYNC_ERROR_HANDLING", "1")

    backend, device = pick_device(local_rank)
    if rank == 0:
        mode = "single process" if single else "distributed"
        log(rank, f"{mode}: world_size={world_size} backend={backend} device={device} "
            f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} "
            f"local_world_size={local_world_size}")
    # torch's own rendezvous can take up to about twice the timeout to give up
    # (store, then barrier); this watchdog holds it to --timeout.
    watchdog = threading.Timer(args.timeout, die, (rank, EXIT_COMM, (
        f"rendezvous failed: not all {world_size} ranks joined within {args.timeout:g}s "
        f"at {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")))
    watchdog.daemon = True
    watchdog.start()
    try:
        dist.init_process_group(backend=backend, init_method="env://",
                                world_size=world_size, rank=rank,
                                timeout=datetime.timedelta(seconds=args.timeout))
    except Exception as e:  # noqa: BLE001 - any failure here is a rendezvous failure
        die(rank, EXIT_COMM, f"rendezvous failed: {type(e).__name__}: {e}")
    finally:
        watchdog.cancel()

    try:
        train(args, world_size, rank, backend, device)
    except RuntimeError as e:
        # Gloo raises as soon as a peer's connection drops (or after --timeout):
        # leave at once rather than wait in destroy_process_group().
        die(rank, EXIT_COMM, f"collective failed (a peer died or timed out): {e}")
    except Exception:  # noqa: BLE001 - a bug: report it, but do not hang in teardown
        traceback.print_exc()
        die(rank, 1, "unexpected error, exiting with 1")

    dist.destroy_process_group()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
