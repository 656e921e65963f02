// One sweep: its state and searcher, kill / pause / resume, the leaderboard (every trial best
// first, each linking to its job's page) and a chart of the searcher's metric, a line per trial.
import { useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { changedJob, POLL_MS, usePoll } from '../live.js';
import { JobLink, StateBadge, Team } from '../parts/common.jsx';
import { ago, duration, flatHparams, metricValue } from '../parts/format.js';
import { TrialChart } from '../parts/trial_chart.jsx';

const ENDED = new Set(['COMPLETED', 'KILLED']);
const LIVE_MS = 2000;

// A change to one of the sweep's trials' jobs, or to a job newer than all of them (perhaps the
// trial the sweep has just made).
function isTrialChange(sweep) {
  const jobs = new Set((sweep?.trials ?? []).map((t) => t.job_id).filter((id) => id !== null));
  const newest = Math.max(0, ...jobs);
  return (block) => {
    const id = changedJob(block);
    return id !== null && (jobs.has(id) || id > newest);
  };
}

function Actions({ sweep, onChanged }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  // The API decides who may (its owner, an admin of its team, cluster admins) and says why not.
  const act = async (verb, question) => {
    if (question && !confirm(question)) return;
    setBusy(true);
    setMessage('');
    try {
      onChanged(await api(`/sweeps/${sweep.id}/${verb}`, { method: 'POST' }));
    } catch (error) {
      setMessage(error.message);
    } finally {
      setBusy(false);
    }
  };
  // The API says what the caller may do now (allowed_actions): no rule is copied here.
  const may = (verb) => (sweep.allowed_actions || []).includes(verb);
  return (
    <div class="actions">
      {may('pause') && (
        <button
          disabled={busy}
          data-testid="pause"
          onClick={() => act('pause', `Pause sweep ${sweep.id} (${sweep.name})? Its running trials stop until it resumes.`)}
        >
          Pause
        </button>
      )}
      {may('resume') && (
        <button disabled={busy} data-testid="resume" onClick={() => act('resume')}>
          Resume
        </button>
      )}
      {may('kill') && (
        <button
          class="danger"
          disabled={busy}
          data-testid="kill"
          onClick={() => act('kill', `Kill sweep ${sweep.id} (${sweep.name}) and its live trials?`)}
        >
          Kill
        </button>
      )}
      {message && <span class="error">{message}</span>}
    </div>
  );
}

function Leaderboard({ sweep }) {
  return (
    <table data-testid="leaderboard">
      <thead>
        <tr>
          <th class="num">Trial</th>
          <th>Job</th>
          <th>State</th>
          <th class="num">Best</th>
          <th class="num">Last</th>
          <th class="num">Steps</th>
          <th class="num">GPU time</th>
          <th>Hyperparameters</th>
        </tr>
      </thead>
      <tbody>
        {sweep.trials.map((t) => (
          <tr data-trial={t.id} data-state={t.state} data-metric={t.metric ?? ''}>
            <td class="num">{t.id}</td>
            <td>{t.job_id !== null ? <JobLink id={t.job_id} /> : <span class="muted">-</span>}</td>
            <td>
              <StateBadge state={t.state} />
              {t.note && <span class="muted"> {t.note}</span>}
            </td>
            <td class="num">{metricValue(t.metric)}</td>
            <td class="num">{metricValue(t.last)}</td>
            <td class="num">{t.steps}</td>
            <td class="num">{duration(t.gpu_seconds)}</td>
            <td>
              <code>{flatHparams(t.hparams).join(' ')}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function SweepPage({ id }) {
  // The answer of a button, shown until the poll brings a version as new.
  const [changed, setChanged] = useState(null);
  const isRelevant = useRef(isTrialChange(null));
  const state = usePoll(
    async (signal) => {
      const sweep = await api(`/sweeps/${id}`, { signal });
      isRelevant.current = isTrialChange(sweep);
      return sweep;
    },
    [id],
    // The leaderboard's values change with metric points, which the event stream does not name.
    (sweep) => (sweep && ENDED.has(sweep.state) ? POLL_MS : LIVE_MS),
    (block) => isRelevant.current(block),
  );
  const polled = state.data;
  const sweep = changed && changed.id === polled?.id && changed.version > polled.version ? changed : polled;
  if (!sweep) return state.error ? <p class="error">{state.error.message}</p> : <p class="muted">Loading…</p>;
  const { searcher } = sweep;
  return (
    <section data-testid="sweep-page" data-state={sweep.state}>
      <h1>
        Sweep {sweep.id}: {sweep.name} <StateBadge state={sweep.state} />
      </h1>
      {state.error && <p class="error">{state.error.message}</p>}
      <p>
        {sweep.user} · <Team name={sweep.team} /> · created <span title={sweep.created_at}>{ago(sweep.created_at)}</span>
        {sweep.message && <> · {sweep.message}</>}
      </p>
      <p data-testid="searcher">
        Searcher <strong>{searcher.name}</strong>: {searcher.mode === 'max' ? 'maximise' : 'minimise'}{' '}
        <code>{searcher.metric}</code>; {sweep.trials_made} of at most {searcher.max_trials} trials made,{' '}
        {searcher.max_concurrent_trials} at once; {duration(sweep.gpu_seconds)} of GPU time
        {sweep.best_trial !== null && <>; best: trial {sweep.best_trial}</>}
      </p>
      <Actions sweep={sweep} onChanged={setChanged} />
      <h2>Leaderboard</h2>
      <Leaderboard sweep={sweep} />
      <h2>{searcher.metric} by trial</h2>
      <TrialChart sweepId={sweep.id} metric={searcher.metric} trials={sweep.trials} live={!ENDED.has(sweep.state)} />
    </section>
  );
}
