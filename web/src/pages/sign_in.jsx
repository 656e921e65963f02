// Sign-in: the way in is a link from `cohort dashboard` (or `cohort up`), which signs in at
// once; a token, as `cohort token create` prints it, still works here. Nothing on the page is
// shown without one.
import { useState } from 'preact/hooks';

export function SignIn({ onSignIn, error }) {
  const [value, setValue] = useState('');
  const submit = (event) => {
    event.preventDefault();
    if (value.trim()) onSignIn(value);
  };
  return (
    <form class="sign-in" onSubmit={submit}>
      <h1>Cohort</h1>
      {error && (
        <p class="error" data-testid="sign-in-error">
          {error}
        </p>
      )}
      <p data-testid="sign-in-how">
        To sign in, run <code>cohort dashboard</code> where your CLI is logged in, and open the link
        it prints (it works once, for two minutes).
      </p>
      <label for="token">Or paste a token</label>
      <input
        id="token"
        type="password"
        autocomplete="off"
        placeholder="coh_…"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <button type="submit">Sign in</button>
      <p class="muted">
        A pasted token (<code>cohort token create</code>) is kept in this tab only, until it closes.
        A link's session lasts in every tab of this browser until it expires or you sign out.
      </p>
    </form>
  );
}
