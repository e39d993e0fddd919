import { z } from "@hono/zod-openapi";

/** The flat error body of every failed operation. */
export const ErrorSchema = z
  .object({
    message: z.string(),
    messageKey: z.string(),
    property: z.string().optional(),
  })
  .openapi("Error");

/** Paging of marker-based lists (export jobs, events, dead letters), as the interface gives it. */
export const PageInfoSchema = z
  .object({
    itemCount: z.number(),
    size: z.number(),
    marker: z.string().optional(),
    hasNext: z.boolean(),
    nextMarker: z.string().optional(),
  })
  .openapi("PageInfo");

const errorContent = { "application/json": { schema: ErrorSchema } };

/** The error responses every operation can give. */
const errorResponses = {
  400: { description: "PROPERTY_REQUIRED, INVALID_ARGUMENTS and the like", content: errorContent },
  401: { description: "No or bad token", content: errorContent },
  403: { description: "Bad API key, NOT_AUTHORIZED", content: errorContent },
  404: { description: "*_NOT_FOUND", content: errorContent },
} as const;

/** Request body part of a route declaration. */
export function jsonBody<T extends z.ZodType>(schema: T, description?: string) {
  return { body: { required: true, content: { "application/json": { schema } }, description } } as const;
}

/**
 * A JSON response and the error responses every operation can give. Every
 * success is 200, creates included: the original service answered 200 and its
 * clients treat any other status as a failed call (docs/mic-clients.md).
 */
export function jsonResponses<T extends z.ZodType>(schema: T, description = "OK") {
  return {
    200: { description, content: { "application/json": { schema } } },
    ...errorResponses,
  } as const;
}

/** Responses of an operation that answers no body. */
export function emptyResponses(description = "Done") {
  return {
    200: { description },
    ...errorResponses,
  } as const;
}
