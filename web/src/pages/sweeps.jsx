// Every sweep the caller may read, newest first (GET /sweeps): its state, how many trials it has
// made of its most, its searcher's metric and the best value a trial reported.
import { api } from '../api.js';
import { changedJob, usePoll } from '../live.js';
import { StateBadge, Status, Team } from '../parts/common.jsx';
import { ago, metricValue } from '../parts/format.js';

export const SweepLink = ({ id, children }) => <a href={`#/sweeps/${id}`}>{children ?? `#${id}`}</a>;

export const bestOf = (sweep) => sweep.trials.find((t) => t.id === sweep.best_trial)?.metric ?? null;

export function SweepsPage() {
  // A sweep changes with its trials' jobs: any job's change may be one of them.
  const state = usePoll((signal) => api('/sweeps', { signal }), [], undefined, (block) => changedJob(block) !== null);
  const sweeps = state.data?.sweeps ?? [];
  return (
    <section data-testid="sweeps-page">
      <h1>Sweeps</h1>
      <Status state={state} />
      <table class="sweeps">
        <thead>
          <tr>
            <th>ID</th>
            <th>Name</th>
            <th>User</th>
            <th>Team</th>
            <th>State</th>
            <th class="num">Trials</th>
            <th>Metric</th>
            <th class="num">Best</th>
            <th>Created</th>
          </tr>
        </thead>
        <tbody>
          {sweeps.map((s) => (
            <tr data-sweep={s.id}>
              <td>
                <SweepLink id={s.id} />
              </td>
              <td>
                <SweepLink id={s.id}>{s.name}</SweepLink>
              </td>
              <td>{s.user}</td>
              <td>
                <Team name={s.team} />
              </td>
              <td>
                <StateBadge state={s.state} />
              </td>
              <td class="num" data-testid="trials-made">
                {s.trials_made}/{s.searcher.max_trials}
              </td>
              <td>
                {s.searcher.metric} <span class="muted">({s.searcher.mode})</span>
              </td>
              <td class="num" data-testid="best">
                {metricValue(bestOf(s))}
              </td>
              <td title={s.created_at}>{ago(s.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {state.data && sweeps.length === 0 && (
        <p class="muted">
          No sweeps (<code>cohort sweep submit sweep.yaml</code> starts one: docs/sweeps.md).
        </p>
      )}
    </section>
  );
}
