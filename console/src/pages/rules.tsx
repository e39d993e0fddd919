import { useState } from "preact/hooks";
import type { Client } from "../api.js";
import type { Rule } from "../types.js";
import { ErrorBox, Loading, Page, useLoad } from "../ui.js";

export function RulesPage({ client }: { client: Client }) {
  const rules = useLoad(() => client.get<Rule[]>("/rules"), []);
  const [error, setError] = useState<Error | undefined>();
  const canUpdate = client.can("Rules", "UPDATE");
  const setEnabled = async (rule: Rule, enabled: boolean): Promise<void> => {
    try {
      const answer = await client.call<{ errors: { id: string; message: string }[] }>("PATCH", "/rules", {
        rules: [{ id: rule.id, enabled }],
      });
      setError(answer.errors[0] ? new Error(`${answer.errors[0].id}: ${answer.errors[0].message}`) : undefined);
      rules.reload();
    } catch (err) {
      setError(err as Error);
    }
  };
  return (
    <Page
      title="Rules"
      actions={
        client.can("Rules", "CREATE") && (
          <a class="button" href="#/rules/new">
            New rule
          </a>
        )
      }
    >
      <ErrorBox error={rules.error ?? error} />
      <Loading when={rules.loading && !rules.data} />
      {rules.data && (
        <table>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Name</th>
              <th scope="col">Domain</th>
              <th scope="col">Thing type</th>
              <th scope="col">Conditions</th>
              <th scope="col">Actions</th>
              <th scope="col">Enabled</th>
            </tr>
          </thead>
          <tbody>
            {rules.data.map((rule) => (
              <tr key={rule.id}>
                <td>
                  <a href={`#/rules/${encodeURIComponent(rule.id)}`}>{rule.id}</a>
                </td>
                <td>{rule.name}</td>
                <td>{rule.filter.domain}</td>
                <td>{rule.filter.thingType}</td>
                <td>{rule.expression.map((e) => `${e.resource} ${e.operator}`).join(", ")}</td>
                <td>{rule.actions.map((a) => a.type).join(", ")}</td>
                <td>
                  {canUpdate && !rule.readonly ? (
                    <label class="toggle">
                      <input
                        type="checkbox"
                        name={`enabled-${rule.id}`}
                        checked={rule.enabled}
                        onChange={(e) => void setEnabled(rule, e.currentTarget.checked)}
                      />
                      <span class="visually-hidden">Enable rule {rule.name}</span>
                    </label>
                  ) : rule.enabled ? (
                    "yes"
                  ) : (
                    "no"
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
