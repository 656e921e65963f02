// Every call to the master's API: the token from sign-in on each request, errors as exceptions
// that carry the API's own message (docs/api.md, "Errors").

// sessionStorage, not localStorage or a cookie: the token is gone when the tab closes, no other
// tab or later visitor of this browser profile finds it, and the browser never attaches it by
// itself to a request another site makes us send (no CSRF).
const TOKEN_KEY = 'cohort-token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Called with the error when the master refuses the token (401): the app signs out.
let onUnauthenticated = () => {};
export function whenUnauthenticated(callback) {
  onUnauthenticated = callback;
}

function headers(extra = {}) {
  const value = token.get();
  return value ? { Authorization: `Bearer ${value}`, ...extra } : extra;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body.error) message = [body.error.message, ...(body.error.details ?? [])].join('\n');
  } catch {
    // Not JSON: keep the status line.
  }
  const error = new ApiError(response.status, message);
  if (response.status === 401) onUnauthenticated(error);
  return error;
}

export async function api(path, { method = 'GET', body, signal } = {}) {
  const response = await fetch(`/api/v1${path}`, {
    method,
    signal,
    headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

// Reads a chunked text answer as it arrives (the log stream), calling onText with each decoded
// piece; resolves when the stream ends, rejects on an error or when `signal` aborts.
export async function streamText(path, onText, signal) {
  const response = await fetch(`/api/v1${path}`, { headers: headers(), signal });
  if (!response.ok) throw await failure(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    onText(decoder.decode(value, { stream: true }));
  }
  onText(decoder.decode());
}

export const query = (params) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
};
