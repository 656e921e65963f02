// Pages stay current without a reload: usePoll re-reads what a page shows every interval (the
// API has no push for lists), waiting for one answer before asking again.
import { useEffect, useRef, useState } from 'preact/hooks';

export const POLL_MS = 1500;

// { data, error } of `load(signal)`, re-run every `interval` ms and whenever `deps` change.
export function usePoll(load, deps, interval = POLL_MS) {
  const [state, setState] = useState({ data: undefined, error: undefined });
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const abort = new AbortController();
    let timer;
    setState({ data: undefined, error: undefined });
    const tick = async () => {
      try {
        const data = await loadRef.current(abort.signal);
        if (!abort.signal.aborted) setState({ data, error: undefined });
      } catch (error) {
        if (abort.signal.aborted) return;
        setState((s) => ({ data: s.data, error }));
      }
      if (!abort.signal.aborted && interval > 0) timer = setTimeout(tick, interval);
    };
    tick();
    return () => {
      abort.abort();
      clearTimeout(timer);
    };
  }, deps);
  return state;
}
