// A job's outputs in the object store (GET /jobs/{id}/artifacts, every page), with where their
// upload stands, and a download per file: fetched with the session's credential in ranges of
// 8 MiB (the most one answer of the master holds), then saved from a Blob.
import { useState } from 'preact/hooks';
import { api, fetchRange, query } from '../api.js';
import { usePoll } from '../live.js';

const RANGE = 8 << 20;

export function bytes(n) {
  const units = ['', 'Ki', 'Mi', 'Gi', 'Ti'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n}` : `${n < 10 ? n.toFixed(1) : Math.round(n)}${units[i]}`;
}

// The state line `cohort artifacts ls` prints.
export function uploadState(a) {
  if (!a) return 'none yet';
  const files = (n) => `${n} file${n === 1 ? '' : 's'}`;
  switch (a.state) {
    case 'waiting':
      return `waiting to upload (${files(a.files_total)}, ${bytes(a.bytes_total)})`;
    case 'uploading':
      return `uploading (${a.files_done} of ${files(a.files_total)}, ${bytes(a.bytes_done)} of ${bytes(a.bytes_total)})` +
        (a.reason ? `; retrying: ${a.reason}` : '');
    case 'stored':
      return `stored: ${files(a.files_total)}, ${bytes(a.bytes_total)}` +
        (a.files_skipped ? ` (${a.files_skipped} left out: links or special files)` : '');
    case 'failed':
      return `failed: ${a.reason}`;
    default:
      return a.state;
  }
}

async function listAll(jobId, signal) {
  let after;
  let artifacts = null;
  const files = [];
  for (;;) {
    const page = await api(`/jobs/${jobId}/artifacts${query({ after })}`, { signal });
    if (files.length === 0) artifacts = page.artifacts;
    files.push(...page.files);
    if (!page.more || page.files.length === 0) return { artifacts, files };
    after = files[files.length - 1].path;
  }
}

const outputPath = (jobId, path) =>
  `/jobs/${jobId}/artifacts/${path.split('/').map(encodeURIComponent).join('/')}`;

function Download({ jobId, file }) {
  const [progress, setProgress] = useState(null);
  const [error, setError] = useState('');
  const download = async () => {
    setError('');
    try {
      const parts = [];
      let offset = 0;
      while (offset < file.size) {
        setProgress(Math.floor((100 * offset) / file.size));
        const part = await fetchRange(outputPath(jobId, file.path), offset, offset + RANGE - 1);
        if (part.byteLength === 0) break;
        parts.push(part);
        offset += part.byteLength;
      }
      if (offset !== file.size) throw new Error(`${file.path} changed while it was read: try again`);
      const url = URL.createObjectURL(new Blob(parts, { type: 'application/octet-stream' }));
      const link = document.createElement('a');
      link.href = url;
      link.download = file.path.split('/').pop();
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (e) {
      setError(e.message);
    } finally {
      setProgress(null);
    }
  };
  return (
    <>
      <button disabled={progress !== null} onClick={download} data-testid="download">
        {progress === null ? 'Download' : `${progress}%`}
      </button>
      {error && <span class="error"> {error}</span>}
    </>
  );
}

export function Outputs({ jobId, ended }) {
  // Read once while the job runs (its outputs go to the store after it ends), again when it
  // ends, then every 5 s until the upload is stored or failed: each read is a listing of the
  // store, which the master bounds (a 503 beyond 32 under way).
  const { data, error } = usePoll(
    (signal) => listAll(jobId, signal),
    [jobId, ended],
    (last) => (ended && !['stored', 'failed'].includes(last?.artifacts?.state) ? 5000 : 0),
  );
  if (error && !data) return <p class="error">{error.message}</p>;
  if (!data) return <p class="muted">Loading…</p>;
  return (
    <div data-testid="outputs" data-state={data.artifacts?.state ?? 'none'}>
      <p data-testid="outputs-state">Upload: {uploadState(data.artifacts)}</p>
      {data.files.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Path</th>
              <th>Size</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.files.map((f) => (
              <tr data-output={f.path}>
                <td>
                  <code>{f.path}</code>
                </td>
                <td title={`${f.size} bytes`}>{bytes(f.size)}</td>
                <td>
                  <Download jobId={jobId} file={f} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
