import { useEffect, useState } from "preact/hooks";
import { Client, publicApiKey } from "../api.js";
import { ErrorBox } from "../ui.js";

export function SignIn({ onSignedIn, onSignOut }: { onSignedIn: (c: Client) => void; onSignOut: () => void }) {
  const [apiKey, setApiKey] = useState(localStorage.getItem("dms.console.apiKey") ?? "");
  const [announced, setAnnounced] = useState(false);
  const [userName, setUserName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<Error | undefined>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    void publicApiKey().then((key) => {
      if (key) {
        setApiKey(key);
        setAnnounced(true);
      }
    });
  }, []);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    try {
      const client = await Client.signIn(apiKey, userName, password, onSignOut);
      localStorage.setItem("dms.console.apiKey", apiKey);
      onSignedIn(client);
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>dms console</h1>
      <form onSubmit={submit}>
        <label>
          User name
          <input
            name="userName"
            autoComplete="username"
            required
            value={userName}
            onInput={(e) => setUserName(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {!announced && (
          <label>
            API key
            <input name="apiKey" required value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} />
          </label>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorBox error={error} />
      </form>
    </main>
  );
}
