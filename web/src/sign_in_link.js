// The one-time code of a sign-in link (`cohort dashboard`: http://master:7420/#signin=CODE),
// taken out of the address bar and the history as this module is first evaluated, before the
// page renders or fetches anything: main.jsx imports it first. The fragment never reaches a
// server; replaceState keeps it out of the history, so Back, a bookmark or a copied address
// carries nothing (docs/security.md, "Dashboard sign-in").
function take() {
  const match = /^#signin=([^&]*)/.exec(location.hash);
  if (!match) return null;
  history.replaceState(history.state, '', `${location.pathname}${location.search}#/`);
  return decodeURIComponent(match[1]);
}

export const signInCode = take();
