// Pages are addressed by the URL's hash (#/jobs/7): the master serves one page at /, and a
// reload or a shared link lands on the same view.
import { useEffect, useState } from 'preact/hooks';

// "#/jobs/7?tab=logs" -> { path: ['jobs', '7'], params: URLSearchParams("tab=logs") }
export function parseHash(hash) {
  const text = hash.replace(/^#\/?/, '');
  const [path, search = ''] = text.split('?');
  return { path: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) };
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}

export function navigate(path, params = {}) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) search.set(key, value);
  const text = search.toString();
  location.hash = `#/${path}${text ? `?${text}` : ''}`;
}
