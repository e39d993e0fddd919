/**
 * bench/engine's rules as an Esper user would deploy them: not one statement per rule but a few
 * statements for all rules, the per-rule constants in a table or a named window joined by the thing
 * type. The rules of one shape (the same condition text once the constants are parameters, which
 * translate.ts gives) share a table and one join statement that evaluates the condition for every rule
 * of the observation's type and inserts a verdict into the stream `Eval`; the threshold is counted per
 * (rule, thing) from `Eval`, by an `on-merge` into a keyed table or by `match_recognize` partitioned by
 * rule and thing. Statements named `fired...` deliver the firings.
 */
import type { Param, PeerSpec, Statement } from "./translate.js";

/** How the peer deploys the rules; `statements` is one `match_recognize` statement per rule (translate.ts). */
export const FORMULATIONS = [
  "statements",
  "table-merge",
  "table-merge-live",
  "window-merge",
  "table-recognize",
] as const;
export type FormulationName = (typeof FORMULATIONS)[number];

export interface RuleRows {
  /** The object-array event type the rows are sent as; its statement inserts them into the shape's table or window. */
  eventType: string;
  types: Param[1][];
  rows: (string | number)[][];
}

export interface Formulation {
  name: FormulationName;
  /** One EPL module. */
  module: string;
  /** The rules' constants, sent once the module is deployed and before any observation. */
  rows: RuleRows[];
}

interface Shape {
  presence: string;
  condition: string;
  columns: [name: string, type: Param[1]][];
  rules: Statement[];
}

/** The formulation `name` of the translated rules (undefined for `statements`, which the spec already holds). */
export function formulate(spec: PeerSpec, name: FormulationName): Formulation | undefined {
  if (name === "statements") return undefined;
  const shapes = new Map<string, Shape>();
  for (const s of spec.statements) {
    const key = `${s.presence}\n${s.condition}`;
    let shape = shapes.get(key);
    if (!shape) {
      // The first parameter is the thing type; the rest are the condition's constants.
      const columns = s.params.slice(1).map(([n, t]): [string, Param[1]] => [n, t]);
      shape = { presence: s.presence, condition: s.condition, columns, rules: [] };
      shapes.set(key, shape);
    }
    shape.rules.push(s);
  }
  const store = name === "window-merge" ? "window" : "table";
  const module = [
    "create schema Eval (ruleId string, thingName string, threshold int, hit boolean)",
    "create schema Fired (ruleId string, thingName string)",
    ...(name === "table-recognize" ? [] : [COUNTS]),
  ];
  const rows: RuleRows[] = [];
  [...shapes.values()].forEach((shape, k) => {
    module.push(...shapeStatements(shape, k, store, name === "table-merge-live"));
    rows.push({
      eventType: `RuleRow${k}`,
      types: ["string", "string", "int", ...shape.columns.map(([, t]) => t)],
      rows: shape.rules.map((s) => [s.rule, s.params[0]![2], s.count, ...s.params.slice(1).map(([, , v]) => v)]),
    });
  });
  const counts = [...new Set(spec.statements.map((s) => s.count))];
  module.push(...(name === "table-recognize" ? recognizeCounts(counts) : mergeCounts()));
  return { name, module: module.map((s) => `${s};`).join("\n"), rows };
}

/**
 * A shape's rules in a table (keyed by rule) or a keep-all named window, indexed by type, and the join
 * that evaluates them. `live`: a verdict only for a match or a miss that ends a live run (a row of
 * Counts), since a miss with no run changes nothing.
 */
function shapeStatements(shape: Shape, k: number, store: "table" | "window", live: boolean): string[] {
  const columns = [["thingType", "string"], ["threshold", "int"], ...shape.columns]
    .map(([n, t]) => `${n} ${t}`)
    .join(", ");
  const condition = shape.condition.replace(/\bA\./g, "o.").replace(/\?:(\w+):\w+/g, "r.$1");
  return [
    `@public @buseventtype create objectarray schema RuleRow${k} (ruleId string, ${columns})`,
    store === "table"
      ? `create table Rules${k} (ruleId string primary key, ${columns})`
      : `create window Rules${k}#keepall as RuleRow${k}`,
    `create index Rules${k}ByType on Rules${k} (thingType)`,
    `insert into Rules${k} select * from RuleRow${k}`,
    [
      "insert into Eval select r.ruleId as ruleId, o.thingName as thingName, r.threshold as threshold,",
      `  coalesce(${condition}, false) as hit`,
      `from Obs(${shape.presence}) as o unidirectional, Rules${k} as r where r.thingType = o.thingType`,
      ...(live ? [`  and (coalesce(${condition}, false) or Counts[r.ruleId, o.thingName].n is not null)`] : []),
    ].join("\n"),
  ];
}

const COUNTS = "create table Counts (ruleId string primary key, thingName string primary key, n int)";

/**
 * The run of consecutive matches per (rule, thing) as a row of a keyed table: a match extends it (or
 * fires and removes it at the threshold), a miss removes it, so the table holds only live runs.
 */
function mergeCounts(): string[] {
  const fire = "insert into Fired select e.ruleId as ruleId, e.thingName as thingName";
  return [
    [
      "on Eval as e merge Counts as c where c.ruleId = e.ruleId and c.thingName = e.thingName",
      `  when matched and e.hit and c.n + 1 >= e.threshold then ${fire} then delete`,
      "  when matched and e.hit then update set n = c.n + 1",
      "  when matched then delete",
      `  when not matched and e.hit and e.threshold <= 1 then ${fire}`,
      "  when not matched and e.hit then insert select e.ruleId as ruleId, e.thingName as thingName, 1 as n",
    ].join("\n"),
    "@name('fired') select * from Fired",
  ];
}

/** The run as `match_recognize` partitioned by (rule, thing), one statement per distinct threshold. */
function recognizeCounts(counts: readonly number[]): string[] {
  return counts.map((c) =>
    [
      `@name('fired${c}') select * from Eval(threshold = ${c})`,
      "match_recognize (",
      "  partition by ruleId, thingName",
      "  measures A[0].ruleId as ruleId, A[0].thingName as thingName",
      `  pattern (A{${c}})`,
      "  define A as A.hit",
      ")",
    ].join("\n"),
  );
}
