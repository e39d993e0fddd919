import { checkActionConfig, parseTemplate, TemplateError } from "../actions/index.js";
import { ApiError, invalid } from "../errors/index.js";
import type { RuleBody } from "./schema.js";
import type { ActionItem, ExpressionItem, Poi, Polygon } from "../rule-model/index.js";
import {
  ACTION_TYPES,
  GEOFENCE_OPERATORS,
  POI_OPERATORS,
  VALUE_OPERATORS,
  type ActionType,
} from "../rule-model/index.js";

/** A resource of the thing, or `<nestedType>.<resource>`. */
const RESOURCE = /^(?:[A-Za-z0-9_-]+\.)?[A-Za-z0-9_:-]+$/;
export const MAX_POLYGON_POINTS = 25;
/** Operators whose resource must be the thing's position. */
const LATLNG_ONLY = new Set(["inside", "outside", "insidePoi", "outsidePoi"]);

const isValueOperator = (op: string): boolean => (VALUE_OPERATORS as readonly string[]).includes(op);
const isPolygonOperator = (op: string): boolean => (GEOFENCE_OPERATORS as readonly string[]).includes(op);
const isPoiOperator = (op: string): boolean => (POI_OPERATORS as readonly string[]).includes(op);

/** Checks what the schema cannot: operator/resource/value combinations and `${...}` that parse. */
export function checkExpression(item: ExpressionItem, i: number): void {
  const at = `expression.${i}`;
  if (!RESOURCE.test(item.resource)) invalidAt(`${at}.resource`, "a resource name or <type>.<resource>");
  if (LATLNG_ONLY.has(item.operator) && item.resource !== "latlng") {
    invalidAt(`${at}.resource`, `operator ${item.operator} needs resource latlng`);
  }
  const value = item.value;
  if (isValueOperator(item.operator)) {
    if (typeof value === "number") return;
    if (typeof value !== "string") invalidAt(`${at}.value`, `operator ${item.operator} needs a number or a string`);
    try {
      parseTemplate(value);
    } catch (e) {
      if (e instanceof TemplateError) invalidAt(`${at}.value`, e.message);
      throw e;
    }
  } else if (isPolygonOperator(item.operator)) {
    checkPolygon(value, `${at}.value`, item.operator);
  } else if (isPoiOperator(item.operator)) {
    checkPoi(value, `${at}.value`, item.operator);
  }
}

function checkPolygon(value: ExpressionItem["value"], property: string, operator: string): asserts value is Polygon {
  if (!Array.isArray(value)) invalidAt(property, `operator ${operator} needs an array of [longitude, latitude] points`);
  if (value.length < 3 || value.length > MAX_POLYGON_POINTS) {
    invalidAt(property, `a perimeter has 3 to ${MAX_POLYGON_POINTS} points, got ${value.length}`);
  }
  value.forEach(([lon, lat], n) => {
    if (!inRange(lon, 180) || !inRange(lat, 90))
      invalidAt(property, `point ${n} [${lon}, ${lat}] is not [longitude, latitude]`);
  });
}

function checkPoi(value: ExpressionItem["value"], property: string, operator: string): asserts value is Poi {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    invalidAt(property, `operator ${operator} needs {center: {lat, lon}, radius}`);
  }
  const lat = Number(value.center.lat);
  const lon = Number(value.center.lon);
  if (String(value.center.lat).trim() === "" || !inRange(lat, 90)) invalidAt(`${property}.center.lat`, "a latitude");
  if (String(value.center.lon).trim() === "" || !inRange(lon, 180)) invalidAt(`${property}.center.lon`, "a longitude");
}

function inRange(n: number, limit: number): boolean {
  return Number.isFinite(n) && n >= -limit && n <= limit;
}

function invalidAt(property: string, why: string): never {
  throw invalid(property, why);
}

/** Each action config against its type: INVALID_RULE_CONFIG naming the field. Answers the cleaned actions. */
export function checkActions(actions: RuleBody["actions"], allowPrivateWebhooks: boolean): ActionItem[] {
  return actions.map((action, i) => {
    const type = action.type;
    if (!isActionType(type)) {
      throw new ApiError(
        "INVALID_RULE_CONFIG",
        `Action ${i}: type ${type} is not one of ${ACTION_TYPES.join(", ")}`,
        `actions.${i}.type`,
      );
    }
    if (action.config === null || typeof action.config !== "object" || Array.isArray(action.config)) {
      throw new ApiError(
        "INVALID_RULE_CONFIG",
        `Action ${i} (${action.type}): config must be an object`,
        `actions.${i}.config`,
      );
    }
    const check = checkActionConfig(type, action.config, { allowPrivateWebhooks });
    if (!check.ok) {
      const property = [`actions.${i}.config`, ...check.path].join(".");
      throw new ApiError("INVALID_RULE_CONFIG", `Action ${i} (${action.type}): ${property} ${check.message}`, property);
    }
    return { type, config: check.config };
  });
}

const ACTION_TYPE_SET: ReadonlySet<string> = new Set(ACTION_TYPES);

function isActionType(type: string): type is ActionType {
  return ACTION_TYPE_SET.has(type);
}
