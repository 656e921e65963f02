// One chart of a sweep's metric with a line per trial, "trial N", read from each trial's job
// (GET /jobs/{job}/metrics?tag=METRIC&task=T: its first task's line, the one the searcher
// hears). At most MAX_TRIALS_CHARTED trials, the best first, so that a sweep of hundreds of trials
// costs a bounded number of requests and points.
import { useRef } from 'preact/hooks';
import { api, query } from '../api.js';
import { usePoll } from '../live.js';
import { Chart } from './chart.jsx';

export const MAX_TRIALS_CHARTED = 20;
const POINTS_PER_TRIAL = 500;
const LIVE_MS = 2000;

// Trial N keeps its colour as the leaderboard reorders; neighbours' hues are a golden angle
// apart, so the first dozen are told apart (a name's hash gives "trial 1" and "trial 2" nearly
// the same hue).
const trialColour = (id) => `hsl(${Math.round((id * 137.508) % 360)} 70% 45%)`;

// The task whose points the searcher hears: the first task group's rank 0. A job's spec never
// changes, so it is read once per job.
async function firstTask(jobId, cache, signal) {
  if (!cache.has(jobId)) {
    const job = await api(`/jobs/${jobId}`, { signal });
    cache.set(jobId, `${job.spec.tasks[0].role}/0`);
  }
  return cache.get(jobId);
}

async function trialLine(trial, metric, cache, signal) {
  const task = await firstTask(trial.job_id, cache, signal);
  const answer = await api(
    `/jobs/${trial.job_id}/metrics${query({ tag: metric, task, max_points: POINTS_PER_TRIAL })}`,
    { signal },
  );
  const line = answer.lines[0];
  return line ? { ...line, task: `trial ${trial.id}`, colour: trialColour(trial.id) } : null;
}

async function loadLines(trials, metric, cache, signal) {
  const lines = await Promise.all(
    trials.map((trial) =>
      // A trial whose job the master no longer keeps has no line; the others are still drawn.
      trialLine(trial, metric, cache, signal).catch((error) => {
        if (error.status === 404) return null;
        throw error;
      }),
    ),
  );
  return lines.filter(Boolean);
}

// `trials` in leaderboard order; read again every LIVE_MS while `live`, and not reset when it
// ends (the chart keeps its zoom).
export function TrialChart({ sweepId, metric, trials, live }) {
  const charted = trials.filter((t) => t.job_id !== null).slice(0, MAX_TRIALS_CHARTED);
  // The loader reads the newest list: a new best trial joins the chart on the next read, with
  // no reset of the chart in between.
  const chartedRef = useRef(charted);
  chartedRef.current = charted;
  const liveRef = useRef(live);
  liveRef.current = live;
  const tasks = useRef(new Map());
  // Points are not job changes: read on the timer only, and once more after the sweep ended.
  const state = usePoll(
    (signal) => loadLines(chartedRef.current, metric, tasks.current, signal),
    [sweepId, metric],
    () => (liveRef.current ? LIVE_MS : 0),
    () => false,
  );
  const lines = state.data ?? [];
  const withJobs = trials.filter((t) => t.job_id !== null).length;
  return (
    <div data-testid="trial-chart">
      {state.error && <p class="error">{state.error.message}</p>}
      {withJobs > MAX_TRIALS_CHARTED && (
        <p class="muted" data-testid="charted-note">
          The best {MAX_TRIALS_CHARTED} of {withJobs} trials are charted.
        </p>
      )}
      {state.data && lines.length === 0 ? (
        <p class="muted">No trial has reported {metric} yet.</p>
      ) : (
        state.data && <Chart tag={metric} lines={lines} axis="step" smoothing={0} />
      )}
    </div>
  );
}
