// The dashboard (docs/observability.md, "Dashboard"): sign-in, then one page per view.
// First: a sign-in link's code leaves the address bar before anything else runs.
import { signInCode } from './sign_in_link.js';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { api, SESSION_KEY, token, whenUnauthenticated } from './api.js';
import { useRoute } from './route.js';
import { SignIn } from './pages/sign_in.jsx';
import { ClusterPage } from './pages/cluster.jsx';
import { QueuePage } from './pages/queue.jsx';
import { JobsPage } from './pages/jobs.jsx';
import { JobPage } from './pages/job.jsx';
import { TeamsPage } from './pages/teams.jsx';
import { SweepsPage } from './pages/sweeps.jsx';
import { SweepPage } from './pages/sweep.jsx';
import { SessionsPage } from './pages/sessions.jsx';

const PAGES = [
  ['cluster', 'Cluster'],
  ['queue', 'Queue'],
  ['jobs', 'Jobs'],
  ['sweeps', 'Sweeps'],
  ['sessions', 'Sessions'],
  ['teams', 'Teams'],
];

function Page({ route, me }) {
  const [first, second] = route.path;
  if (first === 'jobs' && second) return <JobPage id={second} me={me} />;
  if (first === 'jobs') return <JobsPage params={route.params} />;
  if (first === 'sweeps' && second) return <SweepPage id={second} />;
  if (first === 'sweeps') return <SweepsPage />;
  if (first === 'sessions') return <SessionsPage me={me} params={route.params} />;
  if (first === 'queue') return <QueuePage />;
  if (first === 'teams') return <TeamsPage />;
  return <ClusterPage />;
}

function App() {
  const route = useRoute();
  // Who the token belongs to (GET /whoami): its name, and the roles that decide which buttons
  // show. Undefined while unknown; null when signed out.
  const [me, setMe] = useState(undefined);
  const [signInError, setSignInError] = useState('');

  const signOut = (message = '') => {
    token.clear();
    setMe(null);
    setSignInError(message);
  };
  const signIn = async (value) => {
    if (value !== undefined) token.set(value.trim());
    try {
      setMe(await api('/whoami'));
      setSignInError('');
    } catch (error) {
      signOut(error.message);
    }
  };
  // The session is revoked on the master, not only forgotten here: its secret is then worth
  // nothing wherever it was copied. The other tabs see it go (the storage event below).
  const signOutEverywhere = async () => {
    if (token.isSession()) {
      await api('/auth/sessions/current', { method: 'DELETE' }).catch(() => {});
    }
    signOut('Signed out.');
  };
  useEffect(() => {
    whenUnauthenticated((error) => signOut(error.message));
    // Another tab signed in or out: so does this one.
    const onStorage = (event) => {
      if (event.key !== SESSION_KEY && event.key !== null) return;
      if (token.get()) signIn();
      else {
        setMe(null);
        setSignInError('Signed out in another tab.');
      }
    };
    addEventListener('storage', onStorage);
    if (signInCode) {
      api('/auth/sessions', { method: 'POST', body: { code: signInCode }, anonymous: true })
        .then((answer) => {
          token.setSession(answer.session);
          return signIn();
        })
        .catch((error) => {
          setMe(null);
          setSignInError(error.message);
        });
    } else if (token.get()) signIn();
    else setMe(null);
    return () => removeEventListener('storage', onStorage);
  }, []);

  if (me === undefined) return <p class="muted">Loading…</p>;
  if (me === null) return <SignIn onSignIn={signIn} error={signInError} />;
  const current = route.path[0] ?? 'cluster';
  return (
    <>
      <header>
        <strong class="brand">Cohort</strong>
        <nav>
          {PAGES.map(([path, title]) => (
            <a href={`#/${path}`} class={current === path ? 'active' : ''} data-page={path}>
              {title}
            </a>
          ))}
        </nav>
        <span class="who" data-testid="who">
          {me.name}
          {me.admin ? ' (admin)' : ''}
        </span>
        <button class="link" data-testid="sign-out" onClick={signOutEverywhere}>
          Sign out
        </button>
      </header>
      <main>
        <Page route={route} me={me} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app'));
