// The queue: pending jobs in the order the scheduler's policy considers them, each with why it
// waits (`ahead` is its place, `summary` and `details` what `cohort why` prints), and each team's
// guaranteed, used and borrowed GPUs: one request, GET /queue, where the server puts them in
// order and says who borrows. The page copies none of the server's rules.
import { api } from '../api.js';
import { usePoll } from '../live.js';
import { JobLink, Status, Team } from '../parts/common.jsx';
import { ago, gpusOf } from '../parts/format.js';

const loadQueue = (signal) => api('/queue', { signal });

function TeamsTable({ teams }) {
  return (
    <table data-testid="queue-teams">
      <thead>
        <tr>
          <th>Team</th>
          <th class="num">Guaranteed</th>
          <th class="num">Limit</th>
          <th class="num">Used</th>
          <th class="num">Borrowed</th>
          <th class="num">Running</th>
          <th class="num">Pending</th>
        </tr>
      </thead>
      <tbody>
        {teams.map((t) => (
          <tr>
            <td>
              <Team name={t.name} />
            </td>
            <td class="num">{t.guaranteed_gpus}</td>
            <td class="num">{t.max_gpus ?? '∞'}</td>
            <td class="num">{t.used_gpus}</td>
            <td class="num">{t.borrowed_gpus}</td>
            <td class="num">{t.running_jobs}</td>
            <td class="num">{t.pending_jobs}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function QueuePage() {
  const state = usePoll(loadQueue, []);
  const { pending = [], teams = [] } = state.data ?? {};
  return (
    <section data-testid="queue-page">
      <h1>Queue</h1>
      <Status state={state} />
      <h2>Pending jobs ({pending.length})</h2>
      {pending.length === 0 ? (
        <p class="muted">Nothing waits.</p>
      ) : (
        <ol class="queue">
          {pending.map(({ job, why }) => (
            <li data-job={job.id}>
              <div>
                <JobLink id={job.id} /> <strong>{job.name}</strong> <span class="muted">{job.user}</span>{' '}
                <Team name={job.team} /> <span class="muted">{gpusOf(job)} GPUs · waiting {ago(job.submitted_at).replace(' ago', '')}</span>
                {why.unschedulable && <span class="state state-failed">unschedulable</span>}
              </div>
              <div class="why">{why.summary}</div>
              {why.details.length > 0 && (
                <details>
                  <summary>why, in detail</summary>
                  <ul>
                    {why.details.map((line) => (
                      <li>{line}</li>
                    ))}
                  </ul>
                </details>
              )}
            </li>
          ))}
        </ol>
      )}
      <h2>Teams</h2>
      <TeamsTable teams={teams} />
    </section>
  );
}
