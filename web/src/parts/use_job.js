// A job kept current by the API's long poll: GET /jobs/{id}?wait_version=V answers as soon as
// the job changes (or after WAIT_MS unchanged), so a state change shows at once without
// polling. Its events are read again after each change, every page of them.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';

const WAIT_MS = 25000;
const RETRY_MS = 2000;

// GET /jobs/{id}/events answers a page at a time (at most 1000, oldest first), `next` being the
// `after` of the next page.
async function allEvents(id, signal) {
  const events = [];
  for (;;) {
    const page = await api(`/jobs/${id}/events?limit=1000&after=${events.length}`, { signal });
    events.push(...page.events);
    if (page.next === null || page.next === undefined || page.events.length === 0) return events;
  }
}

export function useJob(id) {
  const [state, setState] = useState({ job: undefined, events: [], error: undefined });
  useEffect(() => {
    const abort = new AbortController();
    const { signal } = abort;
    (async () => {
      let version = null;
      while (!signal.aborted) {
        try {
          const wait = version === null ? '' : `?wait_version=${version}&timeout_ms=${WAIT_MS}`;
          const job = await api(`/jobs/${id}${wait}`, { signal });
          if (job.version !== version) {
            version = job.version;
            const events = job.redacted ? [] : await allEvents(id, signal);
            setState({ job, events, error: undefined });
          }
          // A redacted job is not long-polled by the master (it answers at once): poll instead.
          if (job.redacted) await new Promise((r) => setTimeout(r, RETRY_MS));
        } catch (error) {
          if (signal.aborted) return;
          setState((s) => ({ ...s, error }));
          await new Promise((r) => setTimeout(r, RETRY_MS));
        }
      }
    })();
    return () => abort.abort();
  }, [id]);
  return state;
}
