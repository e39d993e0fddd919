/** The operator's console: a hash-routed single page over dms's public REST interface. */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Client } from "./api.js";
import { DeadLettersPage } from "./pages/dead-letters.js";
import { EventsPage } from "./pages/events.js";
import { HealthPage } from "./pages/health.js";
import { JobPage, JobsPage } from "./pages/jobs.js";
import { RuleFormPage } from "./pages/rule-form.js";
import { RulesPage } from "./pages/rules.js";
import { SignIn } from "./pages/signin.js";
import { ThingPage } from "./pages/thing.js";
import { ThingsPage } from "./pages/things.js";

const NAV: [string, string, string | undefined][] = [
  ["#/things", "Things", "Things"],
  ["#/rules", "Rules", "Rules"],
  ["#/events", "Events", "Events"],
  ["#/dead-letters", "Dead letters", "Rules"],
  ["#/jobs", "Jobs", "ThingJobs"],
  ["#/health", "Health", undefined],
];

function useHash(): string {
  const [hash, setHash] = useState(location.hash || "#/things");
  useEffect(() => {
    const follow = (): void => setHash(location.hash || "#/things");
    window.addEventListener("hashchange", follow);
    return () => window.removeEventListener("hashchange", follow);
  }, []);
  return hash;
}

function Route({ client, hash }: { client: Client; hash: string }) {
  const [, section, id] = hash.split("/").map(decodeURIComponent);
  switch (section) {
    case "things":
      return id ? <ThingPage key={id} client={client} thingName={id} /> : <ThingsPage client={client} />;
    case "rules":
      return id ? (
        <RuleFormPage key={id} client={client} ruleId={id === "new" ? undefined : id} />
      ) : (
        <RulesPage client={client} />
      );
    case "events":
      return <EventsPage client={client} />;
    case "dead-letters":
      return <DeadLettersPage client={client} />;
    case "jobs":
      return id ? <JobPage key={id} client={client} jobId={id} /> : <JobsPage client={client} />;
    case "health":
      return <HealthPage />;
    default:
      return <ThingsPage client={client} />;
  }
}

function App() {
  const [client, setClient] = useState<Client | undefined>(() => Client.restore(() => setClient(undefined)));
  const hash = useHash();
  if (!client) return <SignIn onSignedIn={setClient} onSignOut={() => setClient(undefined)} />;
  const section = `#/${hash.split("/")[1] ?? ""}`;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/things">
          dms
        </a>
        <nav aria-label="Sections">
          {NAV.filter(([, , resource]) => !resource || client.can(resource, "READ")).map(([href, label]) => (
            <a key={href} href={href} aria-current={section === href ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <span class="who">
          {client.session.userName} ({client.session.roleName}, {client.session.domainName}){" "}
          <button type="button" onClick={() => client.signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        <Route client={client} hash={hash} />
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
