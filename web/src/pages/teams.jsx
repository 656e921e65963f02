// Teams: quotas and what each holds now (GET /teams), and what each used over a period
// (GET /usage?since=P: GPU hours, jobs, queueing), team by team and user by user.
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { usePoll } from '../live.js';
import { Status, Team } from '../parts/common.jsx';
import { duration } from '../parts/format.js';

// Usage reports are computed by the master off its event loop, a few at a time: read less often.
const USAGE_POLL_MS = 5000;
const PERIODS = ['1d', '7d', '30d'];

const hours = (h) => (h ?? 0).toFixed(h >= 10 ? 0 : 2);

function byTeam(rows) {
  const teams = new Map();
  for (const row of rows) {
    const t = teams.get(row.team) ?? { team: row.team, gpu_hours: 0, cpu_hours: 0, jobs_submitted: 0, jobs_succeeded: 0, jobs_failed: 0, jobs_killed: 0, users: [] };
    for (const k of ['gpu_hours', 'cpu_hours', 'jobs_submitted', 'jobs_succeeded', 'jobs_failed', 'jobs_killed']) t[k] += row[k];
    t.users.push(row);
    teams.set(row.team, t);
  }
  return teams;
}

export function TeamsPage() {
  const [since, setSince] = useState('7d');
  const teams = usePoll((signal) => api('/teams', { signal }), []);
  const usage = usePoll((signal) => api(`/usage${query({ since })}`, { signal }), [since], USAGE_POLL_MS);
  const used = byTeam(usage.data?.rows ?? []);
  return (
    <section data-testid="teams-page">
      <h1>Teams</h1>
      <Status state={teams} />
      <table>
        <thead>
          <tr>
            <th>Team</th>
            <th class="num">Guaranteed GPUs</th>
            <th class="num">Limit</th>
            <th class="num">GPUs now</th>
            <th class="num">Borrowed</th>
            <th>Share of guarantee</th>
            <th class="num">Running</th>
            <th class="num">Pending</th>
          </tr>
        </thead>
        <tbody>
          {(teams.data?.teams ?? []).map((t) => {
            const share = t.guaranteed_gpus ? Math.min(1, t.used_gpus / t.guaranteed_gpus) : t.used_gpus ? 1 : 0;
            return (
              <tr data-team={t.name}>
                <td>
                  <Team name={t.name} />
                  {t.implicit && <span class="muted"> (implicit)</span>}
                </td>
                <td class="num">{t.guaranteed_gpus}</td>
                <td class="num">{t.max_gpus ?? '∞'}</td>
                <td class="num">{t.used_gpus}</td>
                <td class="num">{Math.max(0, t.used_gpus - t.guaranteed_gpus)}</td>
                <td>
                  <div class="bar">
                    <div style={{ width: `${share * 100}%` }} />
                  </div>
                </td>
                <td class="num">{t.running_jobs}</td>
                <td class="num">{t.pending_jobs}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h2>
        Usage over the last{' '}
        <select value={since} onChange={(e) => setSince(e.currentTarget.value)}>
          {PERIODS.map((p) => (
            <option value={p}>{p}</option>
          ))}
        </select>
      </h2>
      <Status state={usage} />
      <table data-testid="usage">
        <thead>
          <tr>
            <th>Team / user</th>
            <th class="num">GPU hours</th>
            <th class="num">CPU hours</th>
            <th class="num">Submitted</th>
            <th class="num">Succeeded</th>
            <th class="num">Failed</th>
            <th class="num">Killed</th>
            <th class="num">Mean wait</th>
          </tr>
        </thead>
        <tbody>
          {[...used.values()].flatMap((t) => [
            <tr class="team-row">
              <td>
                <Team name={t.team} />
              </td>
              <td class="num">{hours(t.gpu_hours)}</td>
              <td class="num">{hours(t.cpu_hours)}</td>
              <td class="num">{t.jobs_submitted}</td>
              <td class="num">{t.jobs_succeeded}</td>
              <td class="num">{t.jobs_failed}</td>
              <td class="num">{t.jobs_killed}</td>
              <td />
            </tr>,
            ...t.users.map((u) => (
              <tr>
                <td class="indent">{u.user}</td>
                <td class="num">{hours(u.gpu_hours)}</td>
                <td class="num">{hours(u.cpu_hours)}</td>
                <td class="num">{u.jobs_submitted}</td>
                <td class="num">{u.jobs_succeeded}</td>
                <td class="num">{u.jobs_failed}</td>
                <td class="num">{u.jobs_killed}</td>
                <td class="num">{u.queue_delay_mean_s == null ? '' : duration(u.queue_delay_mean_s)}</td>
              </tr>
            )),
          ])}
        </tbody>
      </table>
      {usage.data && used.size === 0 && <p class="muted">Nothing used in this period.</p>}
    </section>
  );
}
