// Every job, newest first, with filters (state, team, user, name) and pages of PAGE_SIZE
// (GET /jobs?before=CURSOR&limit=N: the cursor keeps pages steady while jobs arrive). Filters and
// cursor live in the URL, so a page can be reloaded or shared.
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { usePoll } from '../live.js';
import { navigate } from '../route.js';
import { JobLink, StateBadge, Status, Team } from '../parts/common.jsx';
import { ago, gpusOf } from '../parts/format.js';

const PAGE_SIZE = 25;
const STATES = ['', 'PENDING', 'STARTING', 'RUNNING', 'STOPPING', 'SUCCEEDED', 'FAILED', 'KILLED'];
const FILTERS = ['state', 'team', 'user', 'name'];

function Filters({ params }) {
  const [draft, setDraft] = useState(() => Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ''])));
  const apply = (event) => {
    event.preventDefault();
    navigate('jobs', draft); // a new filter starts again at the newest page
  };
  const field = (name) => (
    <input
      name={name}
      placeholder={name}
      value={draft[name]}
      onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })}
    />
  );
  return (
    <form class="filters" onSubmit={apply}>
      <select name="state" value={draft.state} onChange={(e) => setDraft({ ...draft, state: e.currentTarget.value })}>
        {STATES.map((s) => (
          <option value={s}>{s || 'any state'}</option>
        ))}
      </select>
      {field('team')}
      {field('user')}
      {field('name')}
      <button type="submit">Filter</button>
    </form>
  );
}

export function JobsPage({ params }) {
  const filters = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) || undefined]));
  const before = params.get('before') ?? '';
  // Cursors of the pages before this one, for "Newer".
  const trail = (params.get('trail') ?? '').split(',').filter(Boolean);
  const key = params.toString();
  const state = usePoll(
    (signal) => api(`/jobs${query({ ...filters, before, limit: PAGE_SIZE })}`, { signal }),
    [key],
  );
  const { jobs = [], next = null } = state.data ?? {};
  const go = (cursor, newTrail) =>
    navigate('jobs', { ...filters, before: cursor, trail: newTrail.join(',') });
  return (
    <section data-testid="jobs-page">
      <h1>Jobs</h1>
      <Filters params={params} key={key} />
      <Status state={state} />
      <table class="jobs">
        <thead>
          <tr>
            <th>ID</th>
            <th>Name</th>
            <th>User</th>
            <th>Team</th>
            <th>State</th>
            <th class="num">GPUs</th>
            <th>Submitted</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr data-job={job.id}>
              <td>
                <JobLink id={job.id} />
              </td>
              <td>
                <JobLink id={job.id}>{job.name}</JobLink>
              </td>
              <td>{job.user}</td>
              <td>
                <Team name={job.team} />
              </td>
              <td>
                <StateBadge state={job.state} />
              </td>
              <td class="num">{gpusOf(job)}</td>
              <td title={job.submitted_at}>{ago(job.submitted_at)}</td>
              <td class="message">{job.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {state.data && jobs.length === 0 && <p class="muted">No jobs match.</p>}
      <div class="pager">
        <button disabled={trail.length === 0 && !before} onClick={() => go(trail.at(-1) ?? '', trail.slice(0, -1))}>
          ← Newer
        </button>
        <button disabled={next == null} onClick={() => go(String(next), [...trail, before])} data-testid="older">
          Older →
        </button>
      </div>
    </section>
  );
}
