import { useState } from "preact/hooks";
import type { Client } from "../api.js";
import type { Delivery, ObservationDeadLetter } from "../types.js";
import { ErrorBox, Page, time, useLoad } from "../ui.js";

export function DeadLettersPage({ client }: { client: Client }) {
  const [type, setType] = useState("");
  const [error, setError] = useState<Error | undefined>();
  const deliveries = useLoad(
    () => client.get<{ deadLetters: Delivery[] }>("/actions/dead-letters?size=100").then((a) => a.deadLetters),
    [],
  );
  const observations = useLoad(
    () =>
      client
        .get<{ deadLetters: ObservationDeadLetter[] }>("/observations/dead-letters?size=100")
        .then((a) => a.deadLetters),
    [],
  );
  const canRetry = client.can("Rules", "UPDATE");
  const retry = async (id: string): Promise<void> => {
    try {
      await client.call("POST", `/actions/dead-letters/${encodeURIComponent(id)}/retry`);
      setError(undefined);
      deliveries.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  const shown = (deliveries.data ?? []).filter((d) => !type || d.type === type);
  return (
    <Page title="Dead letters">
      <h2>Actions that ran out of attempts</h2>
      <label>
        Action type{" "}
        <select name="type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
          {["", "WEBHOOK", "EMAIL", "SMS", "SET_RESOURCE", "EVENT"].map((t) => (
            <option key={t} value={t}>
              {t || "any"}
            </option>
          ))}
        </select>
      </label>
      <ErrorBox error={deliveries.error ?? error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Updated</th>
            <th scope="col">Type</th>
            <th scope="col">Rule</th>
            <th scope="col">Thing</th>
            <th scope="col">Last error</th>
            <th scope="col">Retry</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((d) => (
            <tr key={d.id}>
              <td>{time(d.updatedAt)}</td>
              <td>{d.type}</td>
              <td>{d.ruleId}</td>
              <td>{d.thingName}</td>
              <td>{d.lastError}</td>
              <td>
                {canRetry && (
                  <button type="button" onClick={() => void retry(d.id)}>
                    Retry
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Observations the engine refused</h2>
      <ErrorBox error={observations.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Source</th>
            <th scope="col">Thing</th>
            <th scope="col">Reason</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {(observations.data ?? []).map((d) => (
            <tr key={d.id}>
              <td>{time(d.createdAt)}</td>
              <td>{d.source}</td>
              <td>{d.thingName}</td>
              <td>{d.reason}</td>
              <td>{d.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}
