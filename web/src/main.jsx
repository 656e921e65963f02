// The dashboard (docs/observability.md, "Dashboard"): sign-in, then one page per view.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { api, token, whenUnauthenticated } from './api.js';
import { useRoute } from './route.js';
import { SignIn } from './pages/sign_in.jsx';
import { ClusterPage } from './pages/cluster.jsx';
import { QueuePage } from './pages/queue.jsx';
import { JobsPage } from './pages/jobs.jsx';
import { JobPage } from './pages/job.jsx';
import { TeamsPage } from './pages/teams.jsx';

const PAGES = [
  ['cluster', 'Cluster'],
  ['queue', 'Queue'],
  ['jobs', 'Jobs'],
  ['teams', 'Teams'],
];

function Page({ route, me }) {
  const [first, second] = route.path;
  if (first === 'jobs' && second) return <JobPage id={second} me={me} />;
  if (first === 'jobs') return <JobsPage params={route.params} />;
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
    token.set(value.trim());
    try {
      setMe(await api('/whoami'));
      setSignInError('');
    } catch (error) {
      signOut(error.message);
    }
  };
  useEffect(() => {
    whenUnauthenticated((error) => signOut(error.message));
    if (token.get()) signIn(token.get());
    else setMe(null);
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
        <button class="link" onClick={() => signOut()}>
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
