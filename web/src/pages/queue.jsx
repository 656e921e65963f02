// The queue: pending jobs in the order the scheduler's policy considers them, each with why it
// waits (GET /jobs?state=PENDING, page after page, then GET /jobs/{id}/explain for each: `ahead`
// is its place, `summary` and `details` what `cohort why` prints); and each team's guaranteed,
// used and borrowed GPUs (GET /teams).
import { allJobs, api } from '../api.js';
import { usePoll } from '../live.js';
import { JobLink, Status, Team } from '../parts/common.jsx';
import { ago, gpusOf } from '../parts/format.js';

// Explaining costs a request per job: the first ones in submission order are explained, the
// rest listed after them.
const MAX_EXPLAINED = 100;

async function loadQueue(signal) {
  const [jobs, { teams }] = await Promise.all([allJobs({ state: 'PENDING' }, { signal }), api('/teams', { signal })]);
  // Jobs of teams the token has no role in may not be explained to it (403): they show the
  // job's own message, after the others.
  const explainable = jobs.filter((job) => !job.redacted);
  const others = jobs.filter((job) => job.redacted);
  const explained = await Promise.all(
    explainable.slice(0, MAX_EXPLAINED).map(async (job) => {
      try {
        return { job, why: await api(`/jobs/${job.id}/explain`, { signal }) };
      } catch (error) {
        return { job, why: { summary: job.message, details: [], ahead: null, error: error.message } };
      }
    }),
  );
  for (const job of [...explainable.slice(MAX_EXPLAINED), ...others]) explained.push({ job, why: { summary: job.message, details: [], ahead: null } });
  // Backing-off jobs have no place (ahead null): they wait for their time, after the others.
  const place = (e) => (e.why.ahead ?? Number.MAX_SAFE_INTEGER);
  explained.sort((a, b) => place(a) - place(b) || a.job.id - b.job.id);
  return { pending: explained, teams };
}

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
            <td class="num">{Math.max(0, t.used_gpus - t.guaranteed_gpus)}</td>
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
