// One tag's chart (GET /jobs/{id}/metrics?tag=T&max_points=N): a line per task (the first 100
// when more tasks have the tag: `leftOut` says how many are not shown), rows
// [step, time, value, min, max, count], each line in its own `colour` if it has one. The x axis
// is the step or the wall time; smoothing is an exponential moving average, as TensorBoard's;
// drag to zoom in, double-click to zoom out.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { teamColour } from './format.js';

export const MAX_POINTS = 1000;

// The lines on one x axis: uPlot wants one sorted x array, a y array per line, null where a
// line has no point. Every row keeps its own x entry, so rows that share an x (points read in
// the same instant, on the time axis) are all drawn.
export function alignLines(lines, axis) {
  const column = axis === 'time' ? 1 : 0;
  const rows = lines.flatMap((line, index) => line.rows.map((row) => [row[column], index, row[2]]));
  rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const ys = lines.map(() => new Array(rows.length).fill(null));
  rows.forEach(([, index, value], i) => (ys[index][i] = value));
  return [rows.map((r) => r[0]), ...ys];
}

// The x axis spans the data, and at least 2 (seconds, on the time axis): points written in one
// burst share an instant, or lie milliseconds apart, and uPlot would widen a zero-width range to
// 1,000 days, or draw milliseconds as if they were the run. Read from the data, as uPlot has
// already widened `min` and `max` by then.
export function xRange(u, min, max) {
  const xs = u.data[0];
  if (!xs.length || xs[xs.length - 1] - xs[0] >= 2) return [min, max];
  const middle = (xs[0] + xs[xs.length - 1]) / 2;
  return [middle - 1, middle + 1];
}

export function smooth(values, weight) {
  if (!weight) return values;
  let last = null;
  return values.map((v) => {
    if (v === null) return null;
    last = last === null ? v : last * weight + (1 - weight) * v;
    return last;
  });
}

export function Chart({ tag, lines, leftOut = 0, axis, smoothing }) {
  const box = useRef(null);
  const plot = useRef(null);
  const zoomed = useRef(false);
  const data = alignLines(lines, axis);
  const shown = [data[0], ...data.slice(1).map((y) => smooth(y, smoothing))];
  const shape = `${axis}|${lines.map((l) => l.task).join(',')}`;

  // A new plot when the axis or the set of lines changes; otherwise new data keeps the zoom.
  useEffect(() => {
    const options = {
      width: Math.max(300, box.current.clientWidth),
      height: 220,
      scales: { x: { time: axis === 'time', range: xRange } },
      axes: [{ label: axis }, {}],
      cursor: { drag: { x: true, y: false } },
      hooks: {
        setSelect: [() => (zoomed.current = true)],
        // What the x axis shows, for people reading the page's markup and for its tests.
        setScale: [
          (u, key) => {
            if (key !== 'x' || !box.current) return;
            box.current.parentElement.dataset.xMin = u.scales.x.min;
            box.current.parentElement.dataset.xMax = u.scales.x.max;
          },
        ],
      },
      series: [{ label: axis }, ...lines.map((line) => ({ label: line.task, stroke: line.colour ?? teamColour(line.task), spanGaps: true }))],
    };
    plot.current = new uPlot(options, shown, box.current);
    zoomed.current = false;
    const unzoom = () => (zoomed.current = false); // uPlot itself zooms out on a double-click
    box.current.addEventListener('dblclick', unzoom);
    const element = box.current;
    return () => {
      element.removeEventListener('dblclick', unzoom);
      plot.current.destroy();
      plot.current = null;
    };
  }, [shape]);
  useEffect(() => {
    // New points keep a zoomed-in view where it is; otherwise the axes follow the data.
    plot.current?.setData(shown, !zoomed.current);
  });

  return (
    <div
      class="chart"
      data-tag={tag}
      data-points={data[0].length}
      data-lines={lines.map((l) => `${l.task}=${l.rows.length}`).join(',')}
    >
      <div class="chart-title">
        <strong>{tag}</strong>{' '}
        <span class="muted">
          {data[0].length} points
          {lines.some((l) => l.level > 0) ? ' (each a mean of several: zoom in for detail)' : ''}
          {leftOut > 0 ? `; the first ${lines.length} of ${lines.length + leftOut} tasks` : ''}
        </span>
      </div>
      <div ref={box} />
    </div>
  );
}
