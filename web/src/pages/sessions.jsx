// The signed-in user's sessions (docs/runtimes.md, "Shells", "Notebooks"): each with its state
// and why, and what can be done with it: open a notebook (a one-time link, opened in a new tab),
// attach to a shell (the command: a terminal cannot run in this page), stop either. An admin may
// list everyone's, but opens only their own notebooks (the API refuses the others').
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { usePoll } from '../live.js';
import { JobLink, StateBadge, Status, Team } from '../parts/common.jsx';
import { ago, gpusOf } from '../parts/format.js';

const ENDED = new Set(['SUCCEEDED', 'FAILED', 'KILLED']);

function Actions({ job, me }) {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  const kind = job.spec?.session?.kind;
  const running = job.state === 'RUNNING';
  const allowed = new Set(job.allowed_actions ?? []);
  const open = async () => {
    // Opened now, within the click, so that no popup blocker stops it; sent on once the link
    // is there. The new tab gets no handle on this one.
    const tab = window.open('', '_blank');
    if (tab) tab.opener = null;
    setBusy(true);
    setMessage('');
    try {
      const link = await api(`/jobs/${job.id}/notebook-link`, { method: 'POST' });
      if (tab) tab.location.href = link.path;
      else location.href = link.path;
    } catch (error) {
      tab?.close();
      setMessage(error.message);
    } finally {
      setBusy(false);
    }
  };
  const stop = async () => {
    if (!confirm(`Stop session ${job.id} (${job.name})? What it holds in memory is lost.`)) return;
    setBusy(true);
    try {
      await api(`/jobs/${job.id}/kill`, { method: 'POST' });
    } catch (error) {
      setMessage(error.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="actions">
      {kind === 'notebook' && running && job.user === me.name && (
        <button disabled={busy} onClick={open} data-testid="open-notebook">
          Open
        </button>
      )}
      {kind === 'shell' && running && job.user === me.name && (
        <code class="muted" data-testid="attach-command">
          cohort shell --attach {job.id}
        </code>
      )}
      {allowed.has('kill') && (
        <button class="danger" disabled={busy} onClick={stop} data-testid="stop-session">
          Stop
        </button>
      )}
      {message && <span class="error">{message}</span>}
    </div>
  );
}

export function SessionsPage({ me, params }) {
  const everyone = me.admin && params.get('everyone') === '1';
  const state = usePoll(
    (signal) =>
      api(`/jobs${query({ session: 'any', user: everyone ? undefined : me.name, before: '', limit: 50 })}`, {
        signal,
      }),
    [everyone],
  );
  const jobs = state.data?.jobs ?? [];
  const active = jobs.filter((job) => !ENDED.has(job.state));
  const ended = jobs.filter((job) => ENDED.has(job.state)).slice(0, 10);
  const rows = (list) =>
    list.map((job) => (
      <tr data-job={job.id} data-kind={job.spec?.session?.kind} data-state={job.state}>
        <td>
          <JobLink id={job.id} />
        </td>
        <td>{job.spec?.session?.kind}</td>
        <td>{job.name}</td>
        {everyone && <td>{job.user}</td>}
        <td>
          <Team name={job.team} />
        </td>
        <td>
          <StateBadge state={job.state} />
        </td>
        <td class="num">{gpusOf(job)}</td>
        <td title={job.submitted_at}>{ago(job.submitted_at)}</td>
        <td class="message">{job.message}</td>
        <td>
          <Actions job={job} me={me} />
        </td>
      </tr>
    ));
  const header = (
    <thead>
      <tr>
        <th>ID</th>
        <th>Kind</th>
        <th>Name</th>
        {everyone && <th>User</th>}
        <th>Team</th>
        <th>State</th>
        <th class="num">GPUs</th>
        <th>Started</th>
        <th>Message</th>
        <th />
      </tr>
    </thead>
  );
  return (
    <section data-testid="sessions-page">
      <h1>Sessions</h1>
      <p class="muted">
        Shells and notebooks on GPUs: <code>cohort shell --gpus 1</code>, <code>cohort notebook --gpus 1</code>.
        Idle ones are warned, then ended.
        {me.admin && (
          <>
            {' '}
            <a href={everyone ? '#/sessions' : '#/sessions?everyone=1'} data-testid="everyone">
              {everyone ? 'Only mine' : "Everyone's"}
            </a>
          </>
        )}
      </p>
      <Status state={state} />
      <table class="jobs sessions" data-testid="active-sessions">
        {header}
        <tbody>{rows(active)}</tbody>
      </table>
      {state.data && active.length === 0 && <p class="muted">No session runs.</p>}
      {ended.length > 0 && (
        <>
          <h2>Ended</h2>
          <table class="jobs sessions" data-testid="ended-sessions">
            {header}
            <tbody>{rows(ended)}</tbody>
          </table>
        </>
      )}
    </section>
  );
}
