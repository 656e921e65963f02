"""The checks of the chaos test (scripts/chaos.py), as pure functions over what it recorded.

Kept apart from the driver so that chaos_check_test.py can show each check failing on
records made up to break it. Times are wall-clock seconds (time.time(), bash's $EPOCHREALTIME).

Records of the jobs themselves: every task appends to starts.log
    JOB ATTEMPT INDEX NODE start TIME GPUS
when it starts, and
    JOB ATTEMPT INDEX NODE end TIME GPUS HOW
when it ends (HOW: ok, fail, or term from its SIGTERM trap). A task killed with SIGKILL (its
machine was killed) writes no end line.
"""

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone

TERMINAL = ("SUCCEEDED", "FAILED", "KILLED")


@dataclass
class Line:
    job: int
    attempt: int
    index: int
    node: str
    kind: str  # "start" or "end"
    t: float
    gpus: tuple
    how: str = ""

    @property
    def task(self):
        return (self.job, self.attempt, self.index)


@dataclass
class Fault:
    """One injected fault. For a machine loss or a wipe, `t` is when its processes were stopped
    and `until` when they were all dead (SIGKILL sent); for a pause, `t` is the SIGSTOP and
    `until` the SIGCONT; for a master kill, `t` the kill and `until` when it listened again; for
    a step of the master's wall clock, `t` the step by `offset` seconds and `until` the step
    back."""

    kind: str
    node: str
    t: float
    until: float = None
    offset: int = 0


@dataclass
class Report:
    violations: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    details: list = field(default_factory=list)

    def fail(self, message):
        self.violations.append(message)


def clock(t):
    """A wall time as the daemons' logs write it (local time), to find it there."""
    return datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]


def parse_time(text):
    """RFC 3339 with microseconds, as the API writes it."""
    if text is None:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def master_time(text, faults):
    """A time the master wrote (RFC 3339), on the machine's clock: one written while its wall
    clock was stepped (a clock_step fault) is taken back by the step."""
    t = parse_time(text)
    if t is None:
        return None
    for f in faults:
        if f.kind != "clock_step":
            continue
        true = t - f.offset
        if f.t - 1 <= true <= (f.until if f.until is not None else float("inf")) + 1:
            return true
    return t


def parse_starts(text, report):
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        parts = raw.split()
        try:
            if len(parts) < 6 or parts[4] not in ("start", "end"):
                raise ValueError("not a start or end line")
            gpus = tuple(int(g) for g in parts[6].split(",")) if len(parts) > 6 and parts[6] else ()
            lines.append(Line(int(parts[0]), int(parts[1]), int(parts[2]), parts[3], parts[4],
                              float(parts[5]), gpus, parts[7] if len(parts) > 7 else ""))
        except (ValueError, IndexError) as e:
            # A torn line would mean two tasks' writes interleaved, or a task that died mid-write;
            # neither should happen (one short write with O_APPEND, tasks die between lines).
            report.fail(f"starts.log line {number} is malformed ({e}): {raw!r}")
    return lines


def check_single_starts(lines, report):
    """No (job, attempt, task) started twice: the heart of "no attempt runs twice"."""
    starts = defaultdict(list)
    for line in lines:
        if line.kind == "start":
            starts[line.task].append(line)
    for task, seen in sorted(starts.items()):
        if len(seen) > 1:
            where = ", ".join(f"{s.node} at {clock(s.t)}" for s in seen)
            report.fail(f"job {task[0]} attempt {task[1]} task {task[2]} started {len(seen)} "
                        f"times: {where}")
    report.figures["task_starts"] = sum(len(s) for s in starts.values())
    report.figures["started_twice"] = sum(1 for seen in starts.values() if len(seen) > 1)
    return starts


def intervals(lines, faults, end_of_run, report):
    """[start, end] of every task on its node and GPUs. A task without an end line ended when
    its machine was killed (the first kill of its node after its start); one that has neither
    was still running when the run ended, which is itself a violation (its job had ended)."""
    ends = {}
    for line in lines:
        if line.kind == "end":
            ends.setdefault(line.task, line)
    kills = defaultdict(list)
    for f in faults:
        if f.kind in ("machine_loss", "wipe"):
            kills[f.node].append(f)
    out = []
    for line in lines:
        if line.kind != "start":
            continue
        end = ends.get(line.task)
        if end is not None:
            out.append((line, end.t))
            continue
        kill = next((k for k in sorted(kills[line.node], key=lambda k: k.t) if k.until >= line.t),
                    None)
        if kill is not None:
            out.append((line, kill.until))
        else:
            report.fail(f"job {line.job} attempt {line.attempt} task {line.index} on {line.node} "
                        f"started at {clock(line.t)} and never ended, and its machine was not "
                        "killed")
            out.append((line, end_of_run))
    return out


def check_gpu_overlap(spans, report):
    """No GPU used by two tasks at once: on each node, the tasks holding a GPU index follow one
    another, each starting after the last one ended."""
    by_gpu = defaultdict(list)
    for line, end in spans:
        for g in line.gpus:
            by_gpu[(line.node, g)].append((line.t, end, line))
    overlaps = 0
    for (node, gpu), uses in sorted(by_gpu.items()):
        uses.sort(key=lambda u: u[0])
        latest_end, holder = None, None
        for start, end, line in uses:
            if latest_end is not None and start < latest_end:
                overlaps += 1
                report.fail(f"GPU {gpu} of {node}: job {line.job} attempt {line.attempt} task "
                            f"{line.index} started at {clock(start)} while job {holder.job} "
                            f"attempt {holder.attempt} task {holder.index} held it until "
                            f"{clock(latest_end)}")
            if latest_end is None or end > latest_end:
                latest_end, holder = end, line
    report.figures["gpu_overlaps"] = overlaps


def check_jobs(acknowledged, jobs, lines, report):
    """Every acknowledged job exists, once, and ended: SUCCEEDED with every task of its last
    attempt started and ended well by its own account (starts.log), or FAILED saying why."""
    by_id = {j["id"]: j for j in jobs}
    ids = set(acknowledged.values())
    lost = [job_id for job_id in acknowledged.values() if job_id not in by_id]
    report.figures["jobs_lost"] = len(lost)
    for key, job_id in sorted(acknowledged.items(), key=lambda kv: kv[1]):
        if job_id not in by_id:
            report.fail(f"job {job_id} (submission {key}) was acknowledged and is gone")
    for job_id in sorted(set(by_id) - ids):
        report.fail(f"job {job_id} ({by_id[job_id]['name']}) exists but no submission of this run "
                    "was acknowledged with it: a retried submission created a second job")
    if len(ids) != len(acknowledged):
        report.fail(f"{len(acknowledged)} submissions were acknowledged with only {len(ids)} "
                    "job ids: two submissions were given the same job")
    started = {line.task for line in lines if line.kind == "start"}
    ends = {line.task: line for line in lines if line.kind == "end"}
    states = defaultdict(int)
    for job_id in sorted(ids & set(by_id)):
        job = by_id[job_id]
        states[job["state"]] += 1
        if job["state"] == "SUCCEEDED":
            replicas = sum(g.get("replicas", 1) for g in job["spec"]["tasks"])
            for index in range(replicas):
                task = (job_id, job["attempt"], index)
                end = ends.get(task)
                if task not in started:
                    report.fail(f"job {job_id} SUCCEEDED but task {index} of its attempt "
                                f"{job['attempt']} never recorded a start")
                elif end is None or end.how != "ok":
                    how = "no end line" if end is None else f"an end line '{end.how}'"
                    report.fail(f"job {job_id} SUCCEEDED but task {index} of its attempt "
                                f"{job['attempt']} has {how}")
        elif job["state"] == "FAILED":
            if not job.get("message"):
                report.fail(f"job {job_id} FAILED without a reason")
        else:
            report.fail(f"job {job_id} did not finish: {job['state']} ({job.get('message')})")
    report.figures["job_states"] = dict(states)


def late_starts(lines, jobs, faults, report):
    """Tasks that started after the master had ended their attempt: an agent that was away
    (paused, partitioned) read an answer placing them only when it came back. They never run
    twice and are stopped as soon as the agent hears from the master again; the GPU check shows
    that no GPU was offered meanwhile. Counted, not a violation (reliability.md, "Jobs")."""
    ended = {}
    for job in jobs:
        for h in job.get("history", []):
            if h.get("finished_at"):
                ended[(job["id"], h["attempt"])] = master_time(h["finished_at"], faults)
    late = [line for line in lines if line.kind == "start"
            and (line.job, line.attempt) in ended and line.t > ended[(line.job, line.attempt)]]
    for line in late:
        report.details.append(f"job {line.job} attempt {line.attempt} task {line.index} started on "
                              f"{line.node} at {clock(line.t)}, after its attempt ended at "
                              f"{clock(ended[(line.job, line.attempt)])}")
    report.figures["late_starts"] = len(late)


def deadline(loss, bound, master_ups):
    """The latest time a loss at `loss` may be acted on: `bound` after it, or after the
    master's last restart within that time (a restarted master gives every node a whole node
    timeout from its start before it may call it lost)."""
    due = loss + bound
    changed = True
    while changed:
        changed = False
        for up in master_ups:
            if loss < up <= due and up + bound > due:
                due = up + bound
                changed = True
    return due


def check_recovery(lines, faults, jobs, master_ups, bound, report):
    """Every job with a task running on a machine when it was lost (killed, wiped, or paused
    past the node timeout) was requeued (the master ended the attempt: the job's history has
    it) within `bound` of the loss. Returns, by kind of loss, the times from the loss to the
    requeue and to the next attempt's first start (which also waits for free GPUs)."""
    ends = {}
    for line in lines:
        if line.kind == "end":
            ends.setdefault(line.task, line.t)
    first_start = {}
    for line in lines:
        if line.kind == "start":
            key = (line.job, line.attempt)
            first_start[key] = min(first_start.get(key, line.t), line.t)
    by_id = {j["id"]: j for j in jobs}
    affected = {}  # (job, attempt) -> the earliest loss that hit it
    for f in faults:
        if f.kind not in ("machine_loss", "wipe", "pause"):
            continue
        for line in lines:
            if line.kind != "start" or line.node != f.node or line.t >= f.t:
                continue
            end = ends.get(line.task)
            if end is not None and end < f.t:
                continue
            key = (line.job, line.attempt)
            if key not in affected or f.t < affected[key].t:
                affected[key] = f
    requeued_after = defaultdict(list)
    started_after = defaultdict(list)
    for (job_id, attempt), f in sorted(affected.items()):
        job = by_id.get(job_id)
        ended = {h["attempt"]: h for h in (job or {}).get("history", [])}.get(attempt)
        if ended is None or ended.get("finished_at") is None:
            report.fail(f"job {job_id} attempt {attempt} had a task on {f.node} when it was lost "
                        f"({f.kind} at {clock(f.t)}) and the attempt never ended")
            continue
        requeued = master_time(ended["finished_at"], faults)
        if requeued < f.t:
            continue  # it had ended before (a task of an older attempt was still running)
        due = deadline(f.t, bound, master_ups)
        later = [t for (j, a), t in first_start.items() if j == job_id and a > attempt]
        detail = (f"job {job_id} attempt {attempt}: {f.node} lost ({f.kind}) at {clock(f.t)}, "
                  f"attempt ended {requeued - f.t:.1f} s later ({ended.get('result', '')})")
        if later:
            detail += f", next attempt started {min(later) - f.t:.1f} s after the loss"
            started_after[f.kind].append(min(later) - f.t)
        report.details.append(detail)
        if requeued > due:
            report.fail(f"job {job_id} attempt {attempt}: {f.node} was lost ({f.kind}) at "
                        f"{clock(f.t)} and the attempt ended only {requeued - f.t:.1f} s later "
                        f"(bound {due - f.t:.1f} s)")
        requeued_after[f.kind].append(requeued - f.t)
        if due <= f.t + bound:
            report.figures.setdefault("requeue_without_master_restart", []).append(requeued - f.t)
    return requeued_after, started_after


def summary(values):
    if not values:
        return "none"
    return (f"n={len(values)}, median {statistics.median(values):.1f} s, "
            f"max {max(values):.1f} s")
