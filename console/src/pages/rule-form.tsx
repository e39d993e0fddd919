import { useState } from "preact/hooks";
import { ApiError, type Client } from "../api.js";
import { recentObservations } from "../find.js";
import type { DryRunResult, Rule } from "../types.js";
import { ErrorBox, Loading, Page, useLoad } from "../ui.js";

/** The form's fields: text as typed, so that a field holding bad JSON keeps what the user wrote. */
interface Draft {
  id: string;
  name: string;
  description: string;
  category: string;
  enabled: boolean;
  domain: string;
  thingType: string;
  thingNames: string;
  count: string;
  interval: string;
  expression: string;
  actions: string;
}

const EMPTY: Draft = {
  id: "",
  name: "",
  description: "",
  category: "",
  enabled: true,
  domain: "",
  thingType: "",
  thingNames: "",
  count: "1",
  interval: "0",
  expression: '[\n  {"operator": "gt", "resource": "temp", "value": 30}\n]',
  actions:
    '[\n  {"type": "EVENT", "config": {"classification": "ALARM", "message": "${thing.thingName} is hot", "acknowledgmentRequired": true}}\n]',
};

function draftOf(rule: Rule): Draft {
  return {
    id: rule.id,
    name: rule.name,
    description: rule.description ?? "",
    category: rule.category ?? "",
    enabled: rule.enabled,
    domain: rule.filter.domain,
    thingType: rule.filter.thingType,
    thingNames: (rule.filter.thingNames ?? []).join(", "),
    count: String(rule.threshold.count),
    interval: String(rule.threshold.interval),
    expression: JSON.stringify(rule.expression, null, 2),
    actions: JSON.stringify(rule.actions, null, 2),
  };
}

/** The interface names a property by its path (`expression.0.value`, `filter.domain`): the form field holding it. */
function fieldOf(property: string | undefined): keyof Draft | undefined {
  if (!property) return undefined;
  const head = property.split(/[.[]/)[0]!;
  const inFilter: Record<string, keyof Draft> = { domain: "domain", thingType: "thingType", thingNames: "thingNames" };
  if (head === "filter") return inFilter[property.split(".")[1] ?? ""] ?? "domain";
  if (head === "threshold") return property.endsWith("interval") ? "interval" : "count";
  const direct: Record<string, keyof Draft> = {
    id: "id",
    name: "name",
    description: "description",
    category: "category",
    enabled: "enabled",
    expression: "expression",
    actions: "actions",
  };
  return direct[head];
}

class FieldError extends ApiError {
  constructor(message: string, property: string) {
    super(message, 400, "INVALID_ARGUMENTS", property);
  }
}

function json(text: string, property: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new FieldError(`${property} is not valid JSON`, property);
  }
}

function bodyOf(d: Draft, withId: boolean): Record<string, unknown> {
  const names = d.thingNames
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    ...(withId && d.id ? { id: d.id } : {}),
    name: d.name,
    ...(d.description ? { description: d.description } : {}),
    ...(d.category ? { category: d.category } : {}),
    enabled: d.enabled,
    filter: { domain: d.domain, thingType: d.thingType, ...(names.length ? { thingNames: names } : {}) },
    expression: json(d.expression, "expression"),
    threshold: { count: Number(d.count), interval: Number(d.interval) },
    actions: json(d.actions, "actions"),
  };
}

/** What the page said before a created rule moved it to the rule's own address, said again there. */
let carriedNotice: string | undefined;

export function RuleFormPage({ client, ruleId }: { client: Client; ruleId: string | undefined }) {
  const existing = useLoad(
    () => (ruleId ? client.get<Rule>(`/rules/${encodeURIComponent(ruleId)}`) : Promise.resolve(undefined)),
    [ruleId],
  );
  const [draft, setDraft] = useState<Draft | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>();
  const [saved, setSaved] = useState<string | undefined>(() => {
    const notice = carriedNotice;
    carriedNotice = undefined;
    return notice;
  });
  const [dryThing, setDryThing] = useState("");
  const [dryRun, setDryRun] = useState<{ results: DryRunResult[]; triggeredCount: number } | undefined>();
  const d = draft ?? (existing.data ? draftOf(existing.data) : ruleId ? undefined : EMPTY);
  const writable = ruleId ? client.can("Rules", "UPDATE") && !existing.data?.readonly : client.can("Rules", "CREATE");
  if (!d)
    return (
      <Page title={`Rule ${ruleId ?? ""}`}>
        <ErrorBox error={existing.error} />
        <Loading when={existing.loading} />
      </Page>
    );

  const property = error instanceof ApiError ? error.property : undefined;
  const errorField = fieldOf(property);
  const set = (field: keyof Draft, value: string | boolean): void => setDraft({ ...d, [field]: value });
  const field = (name: keyof Draft, label: string, multiline = false) => {
    const invalid = errorField === name;
    const props = {
      id: `rule-${name}`,
      name,
      value: String(d[name]),
      disabled: !writable,
      "aria-invalid": invalid,
      "aria-describedby": invalid ? `rule-${name}-error` : undefined,
    };
    return (
      <div class={`field${invalid ? " invalid" : ""}`}>
        <label for={`rule-${name}`}>{label}</label>
        {multiline ? (
          <textarea rows={6} {...props} onInput={(e) => set(name, e.currentTarget.value)} />
        ) : (
          <input {...props} onInput={(e) => set(name, e.currentTarget.value)} />
        )}
        {invalid && (
          <p class="field-error" id={`rule-${name}-error`} role="alert">
            {error?.message}
          </p>
        )}
      </div>
    );
  };

  const save = async (e: Event): Promise<void> => {
    e.preventDefault();
    setSaved(undefined);
    try {
      const rule = ruleId
        ? await client.call<Rule>("PUT", `/rules/${encodeURIComponent(ruleId)}`, bodyOf(d, false))
        : await client.call<Rule>("POST", "/rules", bodyOf(d, true));
      setError(undefined);
      setSaved(`Saved rule ${rule.id}`);
      if (!ruleId) {
        carriedNotice = `Saved rule ${rule.id}`;
        location.hash = `#/rules/${encodeURIComponent(rule.id)}`;
      }
    } catch (err) {
      setError(err as Error);
    }
  };
  const test = async (): Promise<void> => {
    try {
      const observations = await recentObservations(client, dryThing, "now-7d", 100);
      const rule = bodyOf(d, false);
      const answer = await client.call<{ results: DryRunResult[]; triggeredCount: number }>("POST", "/rules/test", {
        rule,
        observations: observations.map((o) => ({ thingName: dryThing, timestamp: o.timestamp, state: o.state })),
      });
      setError(undefined);
      setDryRun(answer);
    } catch (err) {
      setError(err as Error);
    }
  };

  return (
    <Page title={ruleId ? `Rule ${ruleId}` : "New rule"}>
      <form class="rule-form" onSubmit={save} noValidate>
        {!ruleId && field("id", "Id (optional)")}
        {field("name", "Name")}
        {field("description", "Description")}
        {field("category", "Category")}
        <div class="field">
          <label class="check">
            <input
              type="checkbox"
              name="enabled"
              checked={d.enabled}
              disabled={!writable}
              onChange={(e) => set("enabled", e.currentTarget.checked)}
            />{" "}
            Enabled
          </label>
        </div>
        <fieldset>
          <legend>Filter</legend>
          {field("domain", "Domain")}
          {field("thingType", "Thing type")}
          {field("thingNames", "Thing names (comma-separated, optional)")}
        </fieldset>
        <fieldset>
          <legend>Threshold</legend>
          {field("count", "Count")}
          {field("interval", "Interval (s)")}
        </fieldset>
        {field("expression", "Expressions (JSON)", true)}
        {field("actions", "Actions (JSON)", true)}
        {error && !errorField && <ErrorBox error={error} />}
        {writable && <button type="submit">Save</button>}
        {saved && (
          <p class="ok" role="status">
            {saved}
          </p>
        )}
      </form>
      <section class="dry-run">
        <h2>Dry run</h2>
        <label>
          Thing
          <input name="dryThing" value={dryThing} onInput={(e) => setDryThing(e.currentTarget.value)} />
        </label>{" "}
        <button type="button" onClick={() => void test()} disabled={!dryThing}>
          Try on its last 7 days
        </button>
        {dryRun && (
          <>
            <p>
              {dryRun.triggeredCount} of {dryRun.results.length} observations would trigger.
            </p>
            <table>
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Expressions</th>
                  <th scope="col">Triggered</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {dryRun.results.map((r) => (
                  <tr key={r.index} class={r.triggered ? "triggered" : ""}>
                    <td>{r.index}</td>
                    <td>
                      {r.inFilter
                        ? r.expressions
                            .map((e) => `${e.resource} ${e.operator}: ${e.matched ? "match" : "no"}`)
                            .join("; ")
                        : "outside the filter"}
                    </td>
                    <td>{r.triggered ? "yes" : r.matched ? "matched, held by the threshold" : "no"}</td>
                    <td>{(r.actions ?? []).map((a) => `${a.type} ${JSON.stringify(a.config)}`).join("; ")}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </section>
    </Page>
  );
}
