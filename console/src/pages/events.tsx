import { useState } from "preact/hooks";
import type { Client } from "../api.js";
import type { DmsEvent, PageInfo } from "../types.js";
import { ErrorBox, Loading, Page, time, useLoad } from "../ui.js";

const CLASSIFICATIONS = ["", "ALARM", "WARNING", "NOTIFICATION", "INTERNAL"];

export function EventsPage({ client }: { client: Client }) {
  const [thingName, setThingName] = useState("");
  const [classification, setClassification] = useState("");
  const [acknowledged, setAcknowledged] = useState("");
  const [error, setError] = useState<Error | undefined>();
  const events = useLoad(() => {
    const q = new URLSearchParams({ size: "100" });
    if (thingName) q.set("thingName", thingName);
    if (classification) q.set("classification", classification);
    if (acknowledged) q.set("acknowledged", acknowledged);
    return client.get<{ events: DmsEvent[]; pageInfo: PageInfo }>(`/events?${q}`);
  }, [thingName, classification, acknowledged]);
  const canAck = client.can("Events", "UPDATE");
  const ack = async (id: string): Promise<void> => {
    try {
      await client.call("POST", `/events/${encodeURIComponent(id)}/ack`);
      setError(undefined);
      events.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  return (
    <Page title="Events">
      <div class="filters">
        <label>
          Thing
          <input name="thingName" value={thingName} onChange={(e) => setThingName(e.currentTarget.value)} />
        </label>
        <label>
          Classification
          <select
            name="classification"
            value={classification}
            onChange={(e) => setClassification(e.currentTarget.value)}
          >
            {CLASSIFICATIONS.map((c) => (
              <option key={c} value={c}>
                {c || "any"}
              </option>
            ))}
          </select>
        </label>
        <label>
          Acknowledged
          <select name="acknowledged" value={acknowledged} onChange={(e) => setAcknowledged(e.currentTarget.value)}>
            <option value="">any</option>
            <option value="false">waiting</option>
            <option value="true">acknowledged</option>
          </select>
        </label>
      </div>
      <ErrorBox error={events.error ?? error} />
      <Loading when={events.loading && !events.data} />
      {events.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Class</th>
              <th scope="col">Thing</th>
              <th scope="col">Message</th>
              <th scope="col">Rule</th>
              <th scope="col">Acknowledged</th>
            </tr>
          </thead>
          <tbody>
            {events.data.events.map((e) => (
              <tr key={e.id}>
                <td>{time(e.time)}</td>
                <td>
                  <span class={`badge ${e.classification.toLowerCase()}`}>{e.classification}</span>
                </td>
                <td>
                  <a href={`#/things/${encodeURIComponent(e.thingName)}`}>{e.thingName}</a>
                </td>
                <td>{e.message}</td>
                <td>
                  <a href={`#/rules/${encodeURIComponent(e.ruleId)}`}>{e.ruleId}</a>
                </td>
                <td>
                  {e.acknowledgedAt ? (
                    `${e.acknowledgedBy ?? ""} ${time(e.acknowledgedAt)}`
                  ) : e.acknowledgmentRequired && canAck ? (
                    <button type="button" onClick={() => void ack(e.id)}>
                      Acknowledge
                    </button>
                  ) : e.acknowledgmentRequired ? (
                    "waiting"
                  ) : (
                    ""
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
