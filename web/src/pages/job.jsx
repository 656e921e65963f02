// One job: its tasks (node, GPUs, state), its events, each task's log followed live, its metric
// charts, its outputs in the store (each downloadable), and kill and resubmit where the caller's roles allow (the API checks again).
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { navigate } from '../route.js';
import { StateBadge, Team } from '../parts/common.jsx';
import { ago, clockTime, duration, flatHparams } from '../parts/format.js';
import { useJob } from '../parts/use_job.js';
import { LogView } from '../parts/logs.jsx';
import { Metrics } from '../parts/metrics.jsx';
import { Outputs } from '../parts/outputs.jsx';
import { usePoll } from '../live.js';

const ENDED = new Set(['SUCCEEDED', 'FAILED', 'KILLED']);


function taskNames(job) {
  const names = new Set(job.tasks.map((t) => `${t.role}/${t.index}`));
  for (const group of job.spec.tasks) for (let i = 0; i < (group.replicas ?? 1); i++) names.add(`${group.role}/${i}`);
  return [...names].sort();
}

function Actions({ job, me }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  const run = async (what) => {
    setBusy(true);
    setMessage('');
    try {
      await what();
    } catch (error) {
      setMessage(error.message);
    } finally {
      setBusy(false);
    }
  };
  const kill = () =>
    run(async () => {
      if (!confirm(`Kill job ${job.id} (${job.name})?`)) return;
      await api(`/jobs/${job.id}/kill`, { method: 'POST' });
    });
  const resubmit = () =>
    run(async () => {
      const created = await api('/jobs', { method: 'POST', body: job.spec });
      navigate(`jobs/${created.id}`);
    });
  // What the server says the caller may do with this job (allowed_actions): no rule copied here.
  const allowed = new Set(job.allowed_actions ?? []);
  const canKill = allowed.has('kill');
  const canResubmit = allowed.has('resubmit');
  return (
    <div class="actions">
      {canKill && (
        <button class="danger" disabled={busy} onClick={kill} data-testid="kill">
          Kill
        </button>
      )}
      {canResubmit && (
        <button disabled={busy} onClick={resubmit} data-testid="resubmit">
          Resubmit
        </button>
      )}
      {message && <span class="error">{message}</span>}
    </div>
  );
}

function Tasks({ job }) {
  return (
    <table data-testid="tasks">
      <thead>
        <tr>
          <th>Task</th>
          <th>Node</th>
          <th>GPUs</th>
          <th>State</th>
          <th>Exit</th>
          <th>Started</th>
          <th>Ran</th>
        </tr>
      </thead>
      <tbody>
        {job.tasks.map((t) => {
          const end = t.finished_at ? Date.parse(t.finished_at) : Date.now();
          return (
            <tr>
              <td>
                {t.role}/{t.index}
              </td>
              <td>{t.node}</td>
              <td>{t.gpus.length ? t.gpus.join(', ') : '-'}</td>
              <td>
                <StateBadge state={t.state} />
              </td>
              <td>{t.exit_code ?? (t.signal ? `signal ${t.signal}` : '')}</td>
              <td>{clockTime(t.started_at)}</td>
              <td>{t.started_at ? duration((end - Date.parse(t.started_at)) / 1000) : ''}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

// What the master's advisor finds of a running job (GET /jobs/{id}/usage: "advice"), e.g. GPUs
// starved by a slow input pipeline, or idle ones.
function Advice({ jobId, running }) {
  const { data } = usePoll((signal) => api(`/jobs/${jobId}/usage`, { signal }), [jobId], running ? 5000 : 0);
  const advice = data?.advice ?? [];
  if (!running || advice.length === 0) return null;
  return (
    <div class="advice" data-testid="advice">
      {advice.map((a) => (
        <p>
          <strong>{a.kind === 'idle' ? 'Idle GPUs' : 'Starved GPUs'}:</strong> {a.text}
        </p>
      ))}
    </div>
  );
}

function Events({ events }) {
  return (
    <ol class="timeline" data-testid="events">
      {events.map((e) => (
        <li>
          <span class="muted">{clockTime(e.time)}</span> <strong>{e.type}</strong> {e.message}
        </li>
      ))}
    </ol>
  );
}

export function JobPage({ id, me }) {
  const { job, events, error } = useJob(id);
  const [task, setTask] = useState(null);
  if (!job) return error ? <p class="error">{error.message}</p> : <p class="muted">Loading…</p>;
  const names = taskNames(job);
  const shownTask = task && names.includes(task) ? task : names[0];
  return (
    <section data-testid="job-page" data-state={job.state}>
      <h1>
        Job {job.id}: {job.name} <StateBadge state={job.state} />
      </h1>
      {error && <p class="error">{error.message}</p>}
      <p>
        {job.user} · <Team name={job.team} /> · priority {job.priority} · attempt {job.attempt}
        {job.last_checkpoint_at && (
          <>
            {' '}
            · <span data-testid="checkpoint" title={job.last_checkpoint_at}>
              last checkpoint {ago(job.last_checkpoint_at)}
            </span>
          </>
        )}
        {job.message && <> · {job.message}</>}
      </p>
      {job.trial && (
        <p data-testid="trial">
          Trial {job.trial.trial} of <a href={`#/sweeps/${job.trial.sweep}`}>sweep {job.trial.sweep}</a>:{' '}
          <code>{flatHparams(job.trial.hparams).join(' ')}</code>
        </p>
      )}
      <Actions job={job} me={me} />
      {!job.redacted && <Advice jobId={job.id} running={job.state === 'RUNNING'} />}
      {job.redacted ? (
        <p class="muted">This job belongs to a team you have no role in: its commands, logs and metrics are not shown.</p>
      ) : (
        <>
          <h2>Tasks</h2>
          <Tasks job={job} />
          <h2>Metrics</h2>
          <Metrics jobId={job.id} live={!ENDED.has(job.state)} />
          <h2>Logs</h2>
          <div class="tabs">
            {names.map((name) => (
              <button class={name === shownTask ? 'active' : ''} onClick={() => setTask(name)}>
                {name}
              </button>
            ))}
          </div>
          {shownTask && <LogView jobId={job.id} task={shownTask} key={shownTask} />}
          <h2>Outputs</h2>
          <Outputs jobId={job.id} ended={ENDED.has(job.state)} />
          <h2>Events</h2>
          <Events events={events} />
        </>
      )}
    </section>
  );
}
