// Every call to the master's API: the token from sign-in on each request, errors as exceptions
// that carry the API's own message (docs/api.md, "Errors").

// Two kinds of credential (docs/security.md, "Dashboard sign-in"). A dashboard session (what a
// sign-in link's code is exchanged for) in localStorage: every tab of this browser profile
// shares it until it expires, or any tab signs out (a `storage` event tells the others). A token
// pasted into the sign-in form in sessionStorage: this tab only, gone when it closes. Neither is
// a cookie: the browser never attaches them by itself to a request another site makes us send
// (no CSRF); only this page's own fetch() calls send them, as a bearer header.
export const SESSION_KEY = 'cohort-session';
const TOKEN_KEY = 'cohort-token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? localStorage.getItem(SESSION_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  setSession: (value) => {
    sessionStorage.removeItem(TOKEN_KEY);
    localStorage.setItem(SESSION_KEY, value);
  },
  isSession: () => !sessionStorage.getItem(TOKEN_KEY) && !!localStorage.getItem(SESSION_KEY),
  // The credential in use: a pasted token if this tab has one (the session stays for the other
  // tabs), else the session.
  clear: () => {
    if (sessionStorage.getItem(TOKEN_KEY)) sessionStorage.removeItem(TOKEN_KEY);
    else localStorage.removeItem(SESSION_KEY);
  },
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

async function failure(response, anonymous = false) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body.error) message = [body.error.message, ...(body.error.details ?? [])].join('\n');
  } catch {
    // Not JSON: keep the status line.
  }
  const error = new ApiError(response.status, message);
  if (response.status === 401 && !anonymous) onUnauthenticated(error);
  return error;
}

// `anonymous`: without the credential, and a 401 is this call's failure, not a sign-out (the
// exchange of a sign-in code).
export async function api(path, { method = 'GET', body, signal, anonymous = false } = {}) {
  const type = body === undefined ? {} : { 'Content-Type': 'application/json' };
  const response = await fetch(`/api/v1${path}`, {
    method,
    signal,
    headers: anonymous ? type : headers(type),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response, anonymous);
  return response.json();
}

// One range of bytes, [first, last], of what `path` answers (a job's output: GET
// /jobs/{id}/artifacts/{path} with Range); an empty buffer for a range from the end on (416).
export async function fetchRange(path, first, last, signal) {
  const response = await fetch(`/api/v1${path}`, {
    headers: headers({ Range: `bytes=${first}-${last}` }),
    signal,
  });
  if (response.status === 416) return new ArrayBuffer(0);
  if (!response.ok) throw await failure(response);
  return response.arrayBuffer();
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
