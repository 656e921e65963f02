#!/usr/bin/env python3
"""An MLP on scikit-learn's handwritten digits, whose accuracy depends on its hyperparameters.

The trial of examples/sweep-digits/sweep.yaml: a small PyTorch network (CPU) trained on the
8x8 digits that scikit-learn bundles (1,797 images, no download), with a fixed, stratified
train/validation split. A good point (Adam near lr 1e-3, SGD near 0.1 to 1) reaches a validation
accuracy above 0.95 within a few epochs; plain SGD with a small learning rate, or Adam and
momentum near lr 1, stay far below (README.md has the figures). That contrast is what a sweep has
to find.

Each hyperparameter is taken from the JSON file that $COHORT_HPARAMS names (a sweep's trial gets
one), else from its command-line flag (so "--lr ${hp.lr}" in a command works as well), else its
default. A nested object is read by the last part of each name: {"model": {"hidden": 64}} sets
hidden. A name this script does not know is an error, so a misspelt one in the sweep spec never
passes silently.

After every epoch it prints one cohort-metric line (docs/observability.md) with the epoch as the
step and as the metric "epoch" (ASHA's time_metric), then saves the model, the optimizer, the
random state and the epoch into $COHORT_CHECKPOINT_DIR (a temporary file, fsync, rename: a kill
mid-write leaves the previous checkpoint whole) and prints a cohort-checkpoint line. At start it
resumes from that checkpoint, so a preempted trial continues where it stopped; resumed or not,
the same seed and hyperparameters give the same numbers. Each attempt appends "attempt=N
start_epoch=E" to attempts.log in $COHORT_OUTPUT_DIR, and every run ends by writing result.json
there (best val_acc, its epoch, epochs done). On SIGTERM it skips what is left of the
--epoch-seconds delay, finishes the epoch's computation (well under a second), checkpoints and
exits 0.

Exit codes: 0 success (finished or stopped by SIGTERM), 2 bad arguments or hyperparameters, 1
unexpected error.
"""

import argparse
import json
import math
import os
import select
import signal
import sys
import time


class Stop:
    """SIGTERM sets the flag; the self-pipe wakes a delay at once (no polling, no lock taken in
    the handler)."""

    def __init__(self):
        self.requested = False
        self._r, w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w)
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)  # Ctrl-C by hand: the same clean stop

    def _handle(self, signum, frame):
        self.requested = True

    def sleep(self, seconds):
        deadline = time.monotonic() + seconds
        while not self.requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([self._r], [], [], left)
            try:
                os.read(self._r, 64)  # drain: the handler has run, or will before the next check
            except BlockingIOError:
                pass


# Before anything slow (importing PyTorch takes a second): a trial stopped that early exits 0 too.
STOP = Stop()

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import cohort_metrics  # noqa: E402 - the repository's helper, found beside this example

OPTIMIZERS = ("sgd", "momentum", "adam")
SPLIT_SEED = 0  # the split is part of the problem, not a hyperparameter: every trial sees the same
VALIDATION_FRACTION = 0.25
CHECKPOINT_NAME = "checkpoint.pt"


class BadInput(Exception):
    """Bad arguments or hyperparameters: exit 2 with the message."""


def integer(name, lo=1, hi=None):
    def check(v):
        integral = isinstance(v, int) or isinstance(v, float) and v.is_integer()
        if isinstance(v, bool) or not integral:
            raise BadInput(f"{name}: {v!r} is not an integer")
        v = int(v)
        if v < lo or (hi is not None and v > hi):
            raise BadInput(f"{name}: {v} is out of range [{lo}, {hi if hi is not None else 'inf'}]")
        return v

    return check


def finite_float(name, lo, hi, lo_open=False):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise BadInput(f"{name}: {v!r} is not a number")
        v = float(v)
        if not math.isfinite(v) or v < lo or v > hi or (lo_open and v == lo):
            raise BadInput(f"{name}: {v} is out of range {'(' if lo_open else '['}{lo}, {hi}]")
        return v

    return check


def choice(name, vals):
    def check(v):
        if v not in vals:
            raise BadInput(f"{name}: {v!r} is not one of {', '.join(vals)}")
        return v

    return check


# name -> (default, checker). The sweep's space should stay inside these bounds.
HPARAMS = {
    "lr": (1e-3, finite_float("lr", 0.0, 10.0, lo_open=True)),
    "hidden": (128, integer("hidden", 1, 4096)),
    "optimizer": ("adam", choice("optimizer", OPTIMIZERS)),
    "batch_size": (64, integer("batch_size", 1, 2048)),
    "dropout": (0.0, finite_float("dropout", 0.0, 0.9)),
    "weight_decay": (0.0, finite_float("weight_decay", 0.0, 1.0)),
    "epochs": (27, integer("epochs", 1, 100000)),
    "seed": (1, integer("seed", 0, 2**31 - 1)),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lr", type=float, help="learning rate (default 1e-3)")
    p.add_argument("--hidden", type=int, help="width of the two hidden layers (default 128)")
    p.add_argument("--optimizer", help=f"one of {', '.join(OPTIMIZERS)} (default adam)")
    p.add_argument("--batch-size", type=int, help="examples per step (default 64)")
    p.add_argument("--dropout", type=float, help="dropout after each hidden layer (default 0)")
    p.add_argument("--weight-decay", type=float, help="L2 penalty (default 0)")
    p.add_argument("--epochs", type=int, help="epochs in all (default 27)")
    p.add_argument("--seed", type=int, help="initialisation, shuffling and dropout (default 1)")
    p.add_argument("--epoch-seconds", type=float, default=0.0,
                   help="sleep this long per epoch, to look like a slower model (tests)")
    p.add_argument("--checkpoint-dir",
                   default=os.environ.get("COHORT_CHECKPOINT_DIR") or "checkpoints",
                   help="default: $COHORT_CHECKPOINT_DIR, else ./checkpoints")
    p.add_argument("--output-dir", default=os.environ.get("COHORT_OUTPUT_DIR") or "outputs",
                   help="default: $COHORT_OUTPUT_DIR, else ./outputs")
    args = p.parse_args()
    if not math.isfinite(args.epoch_seconds) or args.epoch_seconds < 0:
        p.error(f"--epoch-seconds: {args.epoch_seconds} must be a finite number, at least 0")
    return args


def flatten(obj, prefix=""):
    """{"model": {"hidden": 64}} -> {"model.hidden": 64}."""
    out = {}
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        else:
            out[name] = v
    return out


def read_hparams_file(path):
    try:
        with open(path) as f:
            obj = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"COHORT_HPARAMS: cannot read {path}: {e}") from None
    if not isinstance(obj, dict):
        raise BadInput(f"COHORT_HPARAMS: {path} holds {type(obj).__name__}, not a JSON object")
    values = {}
    for dotted, v in flatten(obj).items():
        name = dotted.rsplit(".", 1)[-1]
        if name not in HPARAMS:
            raise BadInput(f"COHORT_HPARAMS: {dotted}: unknown hyperparameter "
                           f"(known: {', '.join(HPARAMS)})")
        if name in values:
            raise BadInput(f"COHORT_HPARAMS: {dotted}: {name} is given twice")
        values[name] = v
    return values


def hyperparameters(args):
    """Defaults, overridden by flags, overridden by $COHORT_HPARAMS; each checked."""
    values = {name: default for name, (default, _) in HPARAMS.items()}
    for name in HPARAMS:
        flag = getattr(args, name)
        if flag is not None:
            values[name] = flag
    path = os.environ.get("COHORT_HPARAMS")
    if path:
        values.update(read_hparams_file(path))
    return {name: HPARAMS[name][1](v) for name, v in values.items()}


def load_data():
    """The fixed split: 1,347 training and 450 validation images, every class in proportion."""
    from sklearn.datasets import load_digits  # bundled with scikit-learn: no network
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_val, y_train, y_val = train_test_split(
        digits.data, digits.target, test_size=VALIDATION_FRACTION, random_state=SPLIT_SEED,
        stratify=digits.target)
    # Pixels are 0..16; centre and scale with the training set's statistics only.
    x_train = torch.tensor(x_train, dtype=torch.float32)
    x_val = torch.tensor(x_val, dtype=torch.float32)
    mean, std = x_train.mean(0), x_train.std(0).clamp_min(1.0)
    return ((x_train - mean) / std, torch.tensor(y_train),
            (x_val - mean) / std, torch.tensor(y_val))


def build(hp):
    torch.manual_seed(hp["seed"])
    h = hp["hidden"]
    model = torch.nn.Sequential(
        torch.nn.Linear(64, h), torch.nn.ReLU(), torch.nn.Dropout(hp["dropout"]),
        torch.nn.Linear(h, h), torch.nn.ReLU(), torch.nn.Dropout(hp["dropout"]),
        torch.nn.Linear(h, 10))
    params, lr, wd = model.parameters(), hp["lr"], hp["weight_decay"]
    if hp["optimizer"] == "sgd":
        optimizer = torch.optim.SGD(params, lr=lr, weight_decay=wd)
    elif hp["optimizer"] == "momentum":
        optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=wd)
    else:
        optimizer = torch.optim.Adam(params, lr=lr, weight_decay=wd)
    return model, optimizer


def train_epoch(model, optimizer, x, y, batch_size, generator, stop, epoch_seconds):
    model.train()
    order = torch.randperm(len(x), generator=generator)
    batches = [order[i:i + batch_size] for i in range(0, len(x), batch_size)]
    total = 0.0
    for idx in batches:
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(idx)
        # The delay is spread over the epoch so that SIGTERM lands mid-epoch, as it would in a
        # slow model; what is left of it is skipped once SIGTERM came.
        stop.sleep(epoch_seconds / len(batches))
    return total / len(x)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y).item()
    return int((logits.argmax(1) == y).sum()) / len(y), loss  # exact: correct / 450


def short(x):
    """Six significant digits: the line stays readable; nan and inf stay as they are."""
    return float(f"{x:.6g}")


def save_checkpoint(path, state):
    tmp = f"{path}.tmp.{os.getpid()}"
    torch.save(state, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: a reader sees the old checkpoint or the new one


def write_json(path, obj):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def same_run(saved, hp):
    """The hyperparameters a checkpoint was made with must be this run's (epochs may grow)."""
    differ = [k for k in HPARAMS if k != "epochs" and saved.get(k) != hp[k]]
    if differ:
        listing = ", ".join(f"{k}={saved.get(k)!r} there, {hp[k]!r} here" for k in differ)
        raise BadInput(f"the checkpoint was made with other hyperparameters ({listing}): "
                       "use another checkpoint directory or remove it")


def main():
    args = parse_args()
    hp = hyperparameters(args)
    stop = STOP
    torch.set_num_threads(1)  # a tiny model: threads only cost, and trials share the machine
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    os.makedirs(args.output_dir, exist_ok=True)
    attempt = int(os.environ.get("COHORT_ATTEMPT", "1"))

    x_train, y_train, x_val, y_val = load_data()
    model, optimizer = build(hp)
    ckpt = os.path.abspath(os.path.join(args.checkpoint_dir, CHECKPOINT_NAME))
    epoch, best_acc, best_epoch = 0, None, None
    if os.path.exists(ckpt):
        state = torch.load(ckpt, map_location="cpu")
        same_run(state["hparams"], hp)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])  # dropout's draws go on as if never stopped
        epoch, best_acc, best_epoch = state["epoch"], state["best_val_acc"], state["best_epoch"]
    resumed = " (resumed from checkpoint)" if epoch else ""
    print(f"attempt {attempt} starts at epoch {epoch}{resumed}; {json.dumps(hp, sort_keys=True)}",
          flush=True)
    with open(os.path.join(args.output_dir, "attempts.log"), "a") as f:
        f.write(f"attempt={attempt} start_epoch={epoch}\n")

    while epoch < hp["epochs"] and not stop.requested:
        started = time.monotonic()
        # Each epoch's shuffle depends on the seed and the epoch alone, so a resumed run
        # shuffles as an uninterrupted one would.
        generator = torch.Generator().manual_seed(hp["seed"] * 100003 + epoch)
        train_loss = train_epoch(model, optimizer, x_train, y_train, hp["batch_size"], generator,
                                 stop, args.epoch_seconds)
        val_acc, val_loss = evaluate(model, x_val, y_val)
        epoch += 1
        if best_acc is None or val_acc > best_acc:
            best_acc, best_epoch = val_acc, epoch
        cohort_metrics.log(step=epoch, epoch=epoch, val_acc=val_acc, val_loss=short(val_loss),
                           train_loss=short(train_loss))
        save_checkpoint(ckpt, {"epoch": epoch, "model": model.state_dict(),
                               "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(),
                               "best_val_acc": best_acc, "best_epoch": best_epoch, "hparams": hp})
        cohort_metrics.checkpoint(step=epoch, path=ckpt)
        print(f"epoch {epoch}: {time.monotonic() - started:.3f}s", flush=True)

    write_json(os.path.join(args.output_dir, "result.json"), {
        "best_val_acc": best_acc, "best_epoch": best_epoch, "epochs": epoch,
        "finished": epoch >= hp["epochs"], "hparams": hp})
    if stop.requested:
        print(f"stopped by a signal after epoch {epoch}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadInput as e:
        print(f"train.py: {e}", file=sys.stderr, flush=True)
        sys.exit(2)
    except SystemExit:
        raise
    except Exception:  # noqa: BLE001 - print the traceback, exit 1
        import traceback

        traceback.print_exc()
        sys.exit(1)
