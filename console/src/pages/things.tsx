import { useState } from "preact/hooks";
import type { Client } from "../api.js";
import { findThings, latestObservations, LAST_SEEN_WINDOW, type Latest } from "../find.js";
import type { Thing } from "../types.js";
import { ago, ErrorBox, Loading, Page, useLoad } from "../ui.js";

/** One page of things: the list is paged by prefix search, so a fleet of any size answers at once. */
const PAGE_SIZE = 200;

interface Row {
  thing: Thing;
  latest: Latest | undefined;
}

function summary(state: Record<string, unknown> | undefined): string {
  if (!state) return "";
  return Object.entries(state)
    .slice(0, 4)
    .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(", ");
}

export function ThingsPage({ client }: { client: Client }) {
  const [prefix, setPrefix] = useState("");
  const rows = useLoad(async () => {
    const { things, total } = await findThings(client, prefix, PAGE_SIZE);
    const latest = await latestObservations(
      client,
      things.map((t) => t.thingName),
    );
    const list: Row[] = things.map((thing) => ({ thing, latest: latest.get(thing.thingName) }));
    // Silent things first: never seen in the window, then the longest silent.
    list.sort((a, b) => (a.latest?.lastSeen ?? -1) - (b.latest?.lastSeen ?? -1));
    return { list, total };
  }, [prefix]);
  return (
    <Page title="Things">
      <label class="search">
        Thing name starts with
        <input type="search" name="prefix" value={prefix} onInput={(e) => setPrefix(e.currentTarget.value)} />
      </label>
      <ErrorBox error={rows.error} />
      <Loading when={rows.loading && !rows.data} />
      {rows.data && (
        <>
          <p class="muted">
            {rows.data.list.length} of {rows.data.total} things, silent first (last seen within{" "}
            {LAST_SEEN_WINDOW.slice(4)})
          </p>
          <table>
            <thead>
              <tr>
                <th scope="col">Thing</th>
                <th scope="col">Type</th>
                <th scope="col">Domain</th>
                <th scope="col">Last seen</th>
                <th scope="col">Latest state</th>
              </tr>
            </thead>
            <tbody>
              {rows.data.list.map(({ thing, latest }) => (
                <tr key={thing.thingName} class={latest ? "" : "silent"}>
                  <td>
                    <a href={`#/things/${encodeURIComponent(thing.thingName)}`}>{thing.thingName}</a>
                  </td>
                  <td>{thing.thingType}</td>
                  <td>{thing.domain}</td>
                  <td>{ago(latest?.lastSeen)}</td>
                  <td class="state">{summary(latest?.state)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Page>
  );
}
