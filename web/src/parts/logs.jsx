// One task's log, followed live: GET /jobs/{id}/logs?task=T&follow=true read as a stream
// (fetch + ReadableStream), each line on screen as soon as its chunk arrives. A long log is not
// loaded whole: the stream starts with its last TAIL_BYTES (the master says how much came
// before), and "Whole log" asks for all of it. The browser keeps the last MAX_LINES lines and
// shows them a page at a time; the newest page follows the stream.
import { useEffect, useRef, useState } from 'preact/hooks';
import { streamText } from '../api.js';

const MAX_LINES = 20000;
const PAGE_LINES = 500;
const TAIL_BYTES = 1 << 20;

export function LogView({ jobId, task }) {
  const lines = useRef([]);
  const dropped = useRef(0);
  const [count, setCount] = useState(0); // lines received, to re-render
  const [page, setPage] = useState(null); // null: the newest, following
  const [status, setStatus] = useState('connecting');
  const [whole, setWhole] = useState(false); // the whole log asked for, not its tail
  const box = useRef(null);

  useEffect(() => {
    lines.current = [];
    dropped.current = 0;
    setCount(0);
    setPage(null);
    const abort = new AbortController();
    let partial = '';
    let total = 0;
    const onText = (text) => {
      const parts = (partial + text).split('\n');
      partial = parts.pop();
      if (parts.length === 0) return;
      lines.current.push(...parts);
      total += parts.length;
      const excess = lines.current.length - MAX_LINES;
      if (excess > 0) {
        lines.current.splice(0, excess);
        dropped.current += excess;
      }
      setCount(total);
    };
    setStatus('following');
    const tail = whole ? '' : `&tail=${TAIL_BYTES}`;
    streamText(`/jobs/${jobId}/logs?task=${encodeURIComponent(task)}&follow=true${tail}`, onText, abort.signal)
      .then(() => {
        if (partial) onText('\n');
        setStatus('ended');
      })
      .catch((error) => {
        if (!abort.signal.aborted) setStatus(`error: ${error.message}`);
      });
    return () => abort.abort();
  }, [jobId, task, whole]);
  const cut = !whole && lines.current.length > 0 && lines.current[0].startsWith('[cohort: ') &&
    lines.current[0].includes('earlier bytes not shown');

  const pages = Math.max(1, Math.ceil(lines.current.length / PAGE_LINES));
  const shown = page ?? pages - 1;
  const start = shown * PAGE_LINES;
  const visible = lines.current.slice(start, start + PAGE_LINES);

  // Following: keep the newest line in view.
  useEffect(() => {
    if (page === null && box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [count, page]);

  return (
    <div class="logs" data-task={task}>
      <div class="pager">
        <button disabled={shown === 0} onClick={() => setPage(shown - 1)}>
          ← Older
        </button>
        <span class="muted">
          page {shown + 1} of {pages} · {count} lines{dropped.current ? ` (first ${dropped.current} no longer kept here)` : ''} ·{' '}
          {page === null ? status : 'paused'}
        </span>
        <button disabled={page === null} onClick={() => setPage(shown + 1 >= pages - 1 ? null : shown + 1)}>
          Newer →
        </button>
        <button disabled={page === null} onClick={() => setPage(null)}>
          Follow
        </button>
        {cut && <button onClick={() => setWhole(true)}>Whole log</button>}
      </div>
      <pre ref={box} data-testid="log-lines">
        {visible.join('\n')}
      </pre>
    </div>
  );
}
