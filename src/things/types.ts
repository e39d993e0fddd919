/** What the registry holds and hands out: thing types with their resources, things, thing groups. */
import type { ApiError } from "../errors/index.js";

export const DATA_TYPES = ["long", "double", "string", "boolean", "geo_point", "date", "unknown"] as const;
export const RESOURCE_TYPES = ["thing", "sub-thing", "virtual", "platform"] as const;
export type DataType = (typeof DATA_TYPES)[number];
export type ResourceType = (typeof RESOURCE_TYPES)[number];

export interface ResourceDefinition {
  name: string;
  dataType: DataType;
  resourceType: ResourceType;
}

export interface ThingType {
  id: string;
  label: string;
  domain: string;
  resources: ResourceDefinition[];
  createdAt: string;
  updatedAt: string;
}

export interface Thing {
  thingName: string;
  thingType: string;
  domain: string;
  serial: string | null;
  label: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ThingGroup {
  id: string;
  name: string;
  domain: string;
  things: string[];
  createdAt: string;
  updatedAt: string;
}

export interface NewThing {
  thingName: string;
  thingType: string;
  domain: string;
  serial?: string | undefined;
  secret?: string | undefined;
  label?: string | undefined;
}

/**
 * A thing to create or change; `generateSecret` makes dms generate its secret
 * (returned once); `secretHash` is a chosen secret hashed beforehand (provisioning).
 */
export interface ThingWrite extends NewThing {
  generateSecret?: boolean | undefined;
  secretHash?: string | undefined;
}

export type WriteMode = "create" | "update" | "upsert";

export type ThingOutcome =
  | { status: "created" | "updated" | "unchanged"; thing: Thing; secret?: string }
  | { status: "failed"; error: ApiError };

export interface PutThingsOptions {
  mode: WriteMode;
  /** Refuses one thing (throws an ApiError) before anything of it is written: privileges. */
  authorize?: (input: ThingWrite, existing: Thing | undefined) => void;
  /**
   * Written by the provisioning file: an entry whose digest is the one applied
   * last, on a thing nothing else changed since, is skipped without hashing.
   */
  provisioned?: boolean;
  onProgress?: (done: number, total: number) => void;
}

/** A group's id, name and domain, without its members. */
export type GroupHeader = Pick<ThingGroup, "id" | "name" | "domain">;
