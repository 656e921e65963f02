// A job's training metrics: the series (GET /jobs/{id}/metrics), then one chart per tag, read
// again every poll while the job runs.
import { useState } from 'preact/hooks';
import { api, query } from '../api.js';
import { usePoll } from '../live.js';
import { Chart, MAX_POINTS } from './chart.jsx';

async function loadMetrics(jobId, signal) {
  const { series } = await api(`/jobs/${jobId}/metrics`, { signal });
  const tags = [...new Set(series.map((s) => s.tag))].sort();
  return Promise.all(
    tags.map(async (tag) => {
      const answer = await api(`/jobs/${jobId}/metrics${query({ tag, max_points: MAX_POINTS })}`, { signal });
      return { tag, lines: answer.lines, leftOut: answer.lines_left_out ?? 0 };
    }),
  );
}

export function Metrics({ jobId, live }) {
  const [axis, setAxis] = useState('step');
  const [smoothing, setSmoothing] = useState(0);
  const state = usePoll((signal) => loadMetrics(jobId, signal), [jobId, live], live ? 2000 : 0);
  const charts = state.data ?? [];
  if (state.error) return <p class="error">{state.error.message}</p>;
  if (state.data && charts.length === 0) {
    return <p class="muted">No metrics (a task prints <code>cohort-metric step=N tag=value</code> lines, or writes TensorBoard event files).</p>;
  }
  return (
    <div data-testid="metrics">
      <div class="chart-controls">
        <label>
          x axis{' '}
          <select value={axis} onChange={(e) => setAxis(e.currentTarget.value)} data-testid="axis">
            <option value="step">step</option>
            <option value="time">time</option>
          </select>
        </label>
        <label>
          smoothing{' '}
          <input
            type="range"
            min="0"
            max="0.99"
            step="0.01"
            value={smoothing}
            onInput={(e) => setSmoothing(Number(e.currentTarget.value))}
          />{' '}
          {smoothing.toFixed(2)}
        </label>
        <span class="muted">drag to zoom, double-click to zoom out</span>
      </div>
      <div class="charts">
        {charts.map(({ tag, lines, leftOut }) => (
          <Chart key={tag} tag={tag} lines={lines} leftOut={leftOut} axis={axis} smoothing={smoothing} />
        ))}
      </div>
    </div>
  );
}
