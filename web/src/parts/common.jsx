// Small pieces every page uses.
import { teamColour } from './format.js';

export function StateBadge({ state }) {
  return <span class={`state state-${(state ?? '').toLowerCase()}`}>{state}</span>;
}

export function Team({ name }) {
  return (
    <span class="team">
      <i class="swatch" style={{ background: teamColour(name) }} />
      {name}
    </span>
  );
}

export function JobLink({ id, children }) {
  return <a href={`#/jobs/${id}`}>{children ?? `#${id}`}</a>;
}

// What a page shows while its first answer is on the way, or when a read failed (the last
// good answer stays on screen below the error).
export function Status({ state }) {
  if (state.error) return <p class="error">{state.error.message}</p>;
  if (state.data === undefined) return <p class="muted">Loading…</p>;
  return null;
}
