// How times, durations and teams are shown on every page.

export function ago(iso, now = Date.now()) {
  if (!iso) return '';
  return `${duration((now - Date.parse(iso)) / 1000)} ago`;
}

export function duration(seconds) {
  if (!(seconds >= 0)) return '';
  if (seconds < 60) return `${Math.round(seconds)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(Math.round(seconds % 60)).padStart(2, '0')}s`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(seconds / 86400)}d${Math.floor((seconds % 86400) / 3600)}h`;
}

export const clockTime = (iso) => (iso ? new Date(iso).toLocaleTimeString() : '');

// One colour per team, the same on every page and every load: a hue from the name's hash.
export function teamColour(team) {
  let hash = 0;
  for (const c of team) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${hash % 360} 65% 55%)`;
}

export const gpusOf = (job) =>
  (job.spec?.tasks ?? []).reduce((sum, t) => sum + (t.resources?.gpus ?? 0) * (t.replicas ?? 1), 0);

// A metric's value in 4 significant digits (0.9822, 1.235e-5); '' when there is none.
export function metricValue(value) {
  if (value === null || value === undefined) return '';
  return String(Number(value.toPrecision(4)));
}

// A trial's values as `name=value` pairs, nested ones with dotted names (model.hidden=64), as
// the CLI's leaderboard shows them.
export function flatHparams(hparams, prefix = '') {
  return Object.entries(hparams ?? {}).flatMap(([name, value]) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? flatHparams(value, `${prefix}${name}.`)
      : [`${prefix}${name}=${typeof value === 'number' ? metricValue(value) : value}`],
  );
}
