// Sign-in: a token, as `cohort token create` prints it (or the admin token in the master's data
// directory). Nothing on the page is shown without one.
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
      <label for="token">Token</label>
      <input
        id="token"
        type="password"
        autocomplete="off"
        placeholder="coh_…"
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <button type="submit">Sign in</button>
      {error && <p class="error">{error}</p>}
      <p class="muted">
        An admin makes tokens with <code>cohort token create</code>. The token is kept in this tab
        only, until it closes.
      </p>
    </form>
  );
}
