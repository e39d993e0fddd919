/** The rule resource of the interface: a leaf module that the engine, the actions, the bus and the rules service all read, so none of them imports another for it. */

export const VALUE_OPERATORS = ["gt", "gte", "lt", "lte", "eq", "ne"] as const;
export const GEOFENCE_OPERATORS = ["inside", "outside", "enter", "leave"] as const;
export const POI_OPERATORS = ["insidePoi", "outsidePoi", "enterPoi", "leavePoi"] as const;
export const OPERATORS = [...VALUE_OPERATORS, ...GEOFENCE_OPERATORS, ...POI_OPERATORS] as const;

export type ValueOperator = (typeof VALUE_OPERATORS)[number];
export type GeofenceOperator = (typeof GEOFENCE_OPERATORS)[number];
export type PoiOperator = (typeof POI_OPERATORS)[number];
export type Operator = (typeof OPERATORS)[number];

/** `center` as strings, as the interface gives them; radius in metres. */
export interface Poi {
  center: { lat: string | number; lon: string | number };
  radius: number;
}

/** `[[lon, lat], ...]`, at most 25 points. */
export type Polygon = [number, number][];

export interface ExpressionItem {
  operator: Operator;
  /** A resource of the thing, or `<nestedType>.<resource>` (`untyped.<resource>` for nested objects without type). */
  resource: string;
  /** number | string (maybe a `${...}` expression) for value operators, Poi for *Poi, Polygon for inside/outside/enter/leave. */
  value: number | string | Poi | Polygon;
}

export const ACTION_TYPES = ["WEBHOOK", "EMAIL", "SET_RESOURCE", "SMS", "EVENT"] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

export interface ActionItem {
  type: ActionType;
  config: Record<string, unknown>;
}

export interface RuleFilter {
  domain: string;
  thingType: string;
  thingNames?: string[];
}

export interface Threshold {
  /** Consecutive matching observations before the actions run. */
  count: number;
  /** Minimum seconds between two runs of the actions for one thing. */
  interval: number;
}

export interface Rule {
  id: string;
  name: string;
  description?: string;
  category?: string;
  enabled: boolean;
  filter: RuleFilter;
  expression: ExpressionItem[];
  threshold: Threshold;
  actions: ActionItem[];
}
