// Pages stay current without a reload: usePoll re-reads what a page shows as soon as the
// master says something changed (GET /api/v1/events, server-sent events, read with fetch since
// EventSource cannot send the token), and every interval as well, for what no event covers
// (usage sums) and while the event stream is down. One answer at a time.
import { useEffect, useRef, useState } from 'preact/hooks';
import { streamText, token } from './api.js';

// The fallback poll. A page that sets `window.cohortPollMs` before this script runs gets that
// instead: the end-to-end test sets an hour, so that only the event stream can explain an update.
export const POLL_MS = Number(globalThis.cohortPollMs) || 10000;

// The page's one change stream, shared by every usePoll; reconnects after a drop, not after a
// refused token (signing out ends it).
const listeners = new Set();
let streaming = false;
function startChanges() {
  if (streaming || !token.get()) return;
  streaming = true;
  let pending = '';
  const onText = (text) => {
    pending += text;
    let end;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (/^event: /m.test(block)) listeners.forEach((listener) => listener(block));
    }
  };
  streamText('/events', onText)
    .catch((error) => error)
    .then((error) => {
      streaming = false;
      if (error?.status === 401) return;
      setTimeout(startChanges, 2000);
    });
}

function onChange(listener) {
  listeners.add(listener);
  startChanges();
  return () => listeners.delete(listener);
}

// The job a change names (`event: job`, `data: {"id": 7}`), or null for any other change.
export function changedJob(block) {
  if (!/^event: job$/m.test(block)) return null;
  const data = /^data: (.*)$/m.exec(block);
  try {
    return data ? JSON.parse(data[1]).id : null;
  } catch {
    return null;
  }
}

// { data, error } of `load(signal)`, re-run every `interval` ms and whenever `deps` change, and
// after each change the event stream names that `wants(block)` (default: every change; a
// `resync` always counts). `interval` may be a function of the last answer, read after each:
// a view whose data can no longer change (an ended sweep) then stops the timer (0) without
// being reset; such a view follows the event stream as long as it is shown.
export function usePoll(load, deps, interval = POLL_MS, wants = () => true) {
  const [state, setState] = useState({ data: undefined, error: undefined });
  const loadRef = useRef(load);
  loadRef.current = load;
  const wantsRef = useRef(wants);
  wantsRef.current = wants;
  useEffect(() => {
    const abort = new AbortController();
    let timer;
    let last;
    const every = () => (typeof interval === 'function' ? interval(last) : interval);
    setState({ data: undefined, error: undefined });
    const tick = async () => {
      try {
        const data = await loadRef.current(abort.signal);
        if (abort.signal.aborted) return;
        last = data;
        setState({ data, error: undefined });
      } catch (error) {
        if (abort.signal.aborted) return;
        setState((s) => ({ data: s.data, error }));
      }
      const ms = every();
      if (!abort.signal.aborted && ms > 0) timer = setTimeout(() => run(), ms);
    };
    // A change while an answer is awaited is read right after it.
    let busy = false;
    let again = false;
    const run = async () => {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      clearTimeout(timer);
      await tick();
      busy = false;
      if (again && !abort.signal.aborted) {
        again = false;
        run();
      }
    };
    const relevant = (block) => /^event: resync$/m.test(block) || wantsRef.current(block);
    const follows = typeof interval === 'function' || interval > 0;
    const unsubscribe = follows ? onChange((block) => relevant(block) && run()) : () => {};
    run();
    return () => {
      abort.abort();
      clearTimeout(timer);
      unsubscribe();
    };
  }, deps);
  return state;
}
