/**
 * Writes the operations and fields of docs/api.md from the service's own `/openapi.json`, so the
 * reference cannot drift from the routes: `npm run docs:api` rewrites the part below the marker,
 * `npm run docs:api -- --check` fails when it differs (test/docs/api.test.ts does the same).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import { loadConfig } from "../src/config/index.js";
import { startDms } from "../src/service.js";

export const API_DOC = fileURLToPath(new URL("../docs/api.md", import.meta.url));
/** Everything after this line of docs/api.md is generated. */
export const MARKER =
  "<!-- Generated from /openapi.json by `npm run docs:api`: edit the routes, not the text below. -->";

interface Schema {
  $ref?: string;
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  description?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  nullable?: boolean;
  default?: unknown;
  additionalProperties?: Schema | boolean;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}
interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
}
export interface OpenApi {
  info: { description?: string };
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/** The document a service answers at /openapi.json: one started for the purpose (api role, empty data). */
export async function openApiDocument(): Promise<OpenApi> {
  const dir = mkdtempSync(join(tmpdir(), "dms-api-doc-"));
  try {
    const config = loadConfig({
      DMS_HTTP_PORT: "0",
      DMS_HTTP_HOST: "127.0.0.1",
      DMS_DATA_DIR: dir,
      DMS_LOG_LEVEL: "silent",
      DMS_ROLES: "api",
    });
    const dms = await startDms(config);
    try {
      return (await (await fetch(`${dms.url}/openapi.json`)).json()) as OpenApi;
    } finally {
      await dms.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const refName = (ref: string): string => ref.slice(ref.lastIndexOf("/") + 1);
const anchor = (name: string): string => `#${name.toLowerCase()}`;
const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\n+/g, " ");

/** A schema's type in a few words: `string`, `Rule` (a link), `array of number`, `string or number`. */
function typeOf(s: Schema): string {
  if (s.$ref) return `[${refName(s.$ref)}](${anchor(refName(s.$ref))})`;
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return alternatives.map(typeOf).join(" or ");
  if (s.allOf) return s.allOf.map(typeOf).join(" and ");
  if (s.type === "array") return `array of ${s.items ? typeOf(s.items) : "any"}`;
  return (s.type ?? "any") + (s.nullable ? " or null" : "");
}

/** "1 to 64 characters", "at least 1 item", "at most 100 items", or nothing. */
function between(min: number | undefined, max: number | undefined, unit: string): string | undefined {
  if (min !== undefined && max !== undefined) return `${min} to ${max} ${unit}`;
  if (min !== undefined) return `at least ${min} ${unit}`;
  if (max !== undefined) return `at most ${max} ${unit}`;
  return undefined;
}

/** What a schema allows beyond its type: values, lengths, bounds, pattern, default. */
function rulesOf(s: Schema): string {
  const out: string[] = [];
  if (s.enum) out.push(`one of ${s.enum.map((v) => `\`${String(v)}\``).join(", ")}`);
  const characters = between(s.minLength, s.maxLength, "characters");
  if (characters) out.push(characters);
  if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
  const items = between(s.minItems, s.maxItems, "items");
  if (items) out.push(items);
  if (s.pattern) out.push(`matches \`${s.pattern}\``);
  if (s.default !== undefined) out.push(`default \`${JSON.stringify(s.default)}\``);
  return out.join("; ");
}

/** The rows of an object's fields, nested objects and arrays of objects flattened to dotted paths. */
function fieldRows(s: Schema, prefix = ""): string[] {
  const rows: string[] = [];
  const required = new Set(s.required ?? []);
  for (const [name, field] of Object.entries(s.properties ?? {})) {
    const path = `${prefix}${name}`;
    const notes = [field.description ?? "", rulesOf(field)].filter((x) => x !== "").join(". ");
    rows.push(`| \`${path}\` | ${cell(typeOf(field))} | ${required.has(name) ? "yes" : ""} | ${cell(notes)} |`);
    if (field.properties) rows.push(...fieldRows(field, `${path}.`));
    else if (field.type === "array" && field.items?.properties) rows.push(...fieldRows(field.items, `${path}[].`));
  }
  return rows;
}

function fieldTable(s: Schema): string[] {
  const rows = fieldRows(s);
  if (rows.length === 0) return [`${typeOf(s)}${rulesOf(s) ? ` (${rulesOf(s)})` : ""}`];
  return ["| Field | Type | Required | Notes |", "| --- | --- | --- | --- |", ...rows];
}

function jsonSchema(content: Record<string, { schema?: Schema }> | undefined): Schema | undefined {
  return content?.["application/json"]?.schema;
}

function operation(method: string, path: string, op: Operation): string[] {
  const out = [`### \`${method.toUpperCase()} ${path}\``, ""];
  if (op.summary) out.push(op.summary, "");
  if (op.description) out.push(op.description, "");
  if (op.security && op.security.length === 0) out.push("No credentials.", "");
  const params = op.parameters ?? [];
  if (params.length > 0) {
    out.push("| Parameter | In | Type | Required | Notes |", "| --- | --- | --- | --- | --- |");
    for (const p of params) {
      const s = p.schema ?? {};
      const notes = [p.description ?? s.description ?? "", rulesOf(s)].filter((x) => x !== "").join(". ");
      out.push(`| \`${p.name}\` | ${p.in} | ${cell(typeOf(s))} | ${p.required ? "yes" : ""} | ${cell(notes)} |`);
    }
    out.push("");
  }
  const body = jsonSchema(op.requestBody?.content);
  if (body) out.push("Request body:", "", ...fieldTable(body), "");
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (!status.startsWith("2")) continue;
    const schema = jsonSchema(response.content);
    const what = schema ? `: ${typeOf(schema)}` : "";
    out.push(`Answer ${status}${what}${response.description ? ` (${response.description})` : ""}.`, "");
    if (schema && !schema.$ref && (schema.properties || schema.items?.properties)) {
      out.push(...fieldTable(schema.properties ? schema : schema.items!), "");
    }
  }
  return out;
}

/** The generated part of docs/api.md: every operation by tag, then every named schema's fields. */
export function renderReference(doc: OpenApi): string {
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = op.tags?.[0] ?? "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(...operation(method, path, op));
    }
  }
  const out = [MARKER, "", "# Operations", ""];
  if (doc.info.description) out.push(doc.info.description, "");
  for (const [tag, lines] of byTag) out.push(`## ${tag}`, "", ...lines);
  out.push("# Fields", "");
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
    out.push(`## ${name}`, "");
    if (schema.description) out.push(schema.description, "");
    out.push(...fieldTable(schema), "");
  }
  return `${out.join("\n").trimEnd()}\n`;
}

/**
 * docs/api.md as it should be: its hand-written part, then the reference generated from `doc`, in
 * the project's prettier style (so `prettier --check` and this agree).
 */
export async function apiDoc(current: string, doc: OpenApi): Promise<string> {
  const at = current.indexOf(MARKER);
  const written = at < 0 ? `${current.trimEnd()}\n\n` : current.slice(0, at);
  const options = (await prettier.resolveConfig(API_DOC)) ?? {};
  return prettier.format(written + renderReference(doc), { ...options, parser: "markdown" });
}

async function main(): Promise<void> {
  const current = readFileSync(API_DOC, "utf8");
  const next = await apiDoc(current, await openApiDocument());
  if (process.argv.includes("--check")) {
    if (next !== current) {
      console.error("docs/api.md differs from /openapi.json: run npm run docs:api");
      process.exit(1);
    }
    return;
  }
  writeFileSync(API_DOC, next);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
