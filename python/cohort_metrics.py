"""Training metrics for Cohort, in its line protocol (docs/observability.md).

    import cohort_metrics
    cohort_metrics.log(step=10, loss=0.31, acc=0.88)
    cohort_metrics.log(step=10, metrics={"train/loss": 0.31})  # names Python keywords cannot be
    cohort_metrics.checkpoint(step=10, path="/ckpt/step-10.pt")  # after the checkpoint is whole

Each call writes one line, "cohort-metric step=10 loss=0.31 acc=0.88", printed on standard output
and flushed at once, so that it reaches Cohort while the job runs rather than when a buffer
fills: the agent reads a task's output. With $COHORT_METRICS_FILE set, lines are appended to that
file instead, for runs outside Cohort or tools of your own; Cohort's agent does not read it.

A value is anything float() takes (a Python number, a NumPy scalar, a one-element PyTorch
tensor); NaN and infinities are written as nan, inf and -inf, so a diverging loss shows. A name
is 1 to 256 of A-Z a-z 0-9 _ . / - and not "step" or "time". A call that breaks a rule raises
ValueError and writes nothing.

checkpoint() tells Cohort that the job has just written a checkpoint ("cohort-checkpoint step=10
path=/ckpt/step-10.pt"; step and path are optional, a path is 1 to 1,024 bytes without blanks):
when a preemption must choose, jobs that checkpointed last lose least and go first. Call it once
the checkpoint is whole (after the rename). It is always printed on standard output, even with
$COHORT_METRICS_FILE set: the agent reads only the task's output.

The standard library only: copy this file next to a training
script, or put its directory on PYTHONPATH.
"""

import math
import operator
import os
import re
import sys

__all__ = ["log", "format_line", "checkpoint", "format_checkpoint"]

PREFIX = "cohort-metric "
CHECKPOINT = "cohort-checkpoint"
MAX_PATH_BYTES = 1024
MAX_LINE_BYTES = 4096
MAX_METRICS = 64
_NAME = re.compile(r"[A-Za-z0-9_./-]{1,256}")


def _number(value):
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def format_line(step, metrics, time=None):
    """The protocol line (without its newline) for metrics, a dict of name -> value, at step."""
    try:
        step = operator.index(step)
    except TypeError:
        raise ValueError(f"step must be an integer, not {step!r}") from None
    if not metrics:
        raise ValueError("no metric to log")
    if len(metrics) > MAX_METRICS:
        raise ValueError(f"{len(metrics)} metrics in one line; at most {MAX_METRICS}")
    fields = [f"step={step}"]
    if time is not None:
        t = float(time)
        if not math.isfinite(t) or t < 0:
            raise ValueError(f"time must be seconds since the Unix epoch, not {time!r}")
        fields.append(f"time={t!r}")
    for name, value in metrics.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in ("step", "time"):
            raise ValueError(f"metric name {name!r}: 1 to 256 of A-Z a-z 0-9 _ . / -, "
                             "not step or time")
        try:
            fields.append(f"{name}={_number(value)}")
        except (TypeError, ValueError):
            raise ValueError(f"metric {name}: {value!r} is not a number") from None
    line = PREFIX + " ".join(fields)
    if len(line.encode()) > MAX_LINE_BYTES:
        raise ValueError(f"line of {len(line)} bytes; at most {MAX_LINE_BYTES}")
    return line


def log(step, metrics=None, *, time=None, **named):
    """Writes the metrics given (as metrics={...}, as keywords, or both) at step."""
    everything = dict(metrics or {})
    everything.update(named)
    line = format_line(step, everything, time) + "\n"
    path = os.environ.get("COHORT_METRICS_FILE")
    if path:
        # One write of one line to a file opened for appending: lines from several processes
        # logging to the same file do not interleave.
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
    else:
        sys.stdout.write(line)
        sys.stdout.flush()


def format_checkpoint(step=None, path=None):
    """The checkpoint report line (without its newline)."""
    fields = [CHECKPOINT]
    if step is not None:
        try:
            fields.append(f"step={operator.index(step)}")
        except TypeError:
            raise ValueError(f"step must be an integer, not {step!r}") from None
    if path is not None:
        path = os.fspath(path)
        size = len(path.encode())
        if not 1 <= size <= MAX_PATH_BYTES or any(c.isspace() for c in path):
            raise ValueError(f"path {path!r}: 1 to {MAX_PATH_BYTES} bytes without blanks")
        fields.append(f"path={path}")
    return " ".join(fields)


def checkpoint(step=None, path=None):
    """Reports that a checkpoint (of step, at path, both optional) has just been written."""
    sys.stdout.write(format_checkpoint(step, path) + "\n")
    sys.stdout.flush()
