import { createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../../errors/index.js";
import type { Config } from "../../config/index.js";
import type { Identity } from "../../auth/index.js";
import type { RouteModule } from "../context.js";
import { jsonResponses } from "../openapi.js";

/**
 * The two documents a MIC client reads before it logs in (docs/mic-clients.md).
 * dms is one stack, so it answers every portal host name with its own manifest.
 * `Region`, `IdentityPool` and `UserPool` are names, not services: the C# client
 * builds an AWS Cognito credentials object from them when it starts (no network
 * call); dms serves no Cognito, and a client that calls Cognito with them fails.
 */
const REGION = "dms";

const ManifestSchema = z
  .object({
    ApiGatewayRootUrl: z.string().openapi({ description: "DMS_PUBLIC_URL: the REST root, without a stage" }),
    StackName: z.string().openapi({ description: "DMS_STACK_NAME: the stage the clients put before every path" }),
    Region: z.string(),
    IdentityPool: z.string(),
    UserPool: z.string(),
    EsVersion: z.string().openapi({ description: "The query DSL version of FIND" }),
  })
  .openapi("Manifest");

const MetadataManifestSchema = z
  .object({
    ApiKey: z.string().openapi({ description: "The API key provisioned as the public client key" }),
    Region: z.string(),
    IdentityPool: z.string(),
    UserPool: z.string(),
  })
  .openapi("MetadataManifest");

const tags = ["manifest"];

const manifest = createRoute({
  method: "get",
  path: "/manifest",
  tags,
  summary: "The stack manifest MIC clients start from; no credentials (also /manifest/ and under a stage)",
  security: [],
  request: { query: z.object({ hostname: z.string().max(253).optional() }) },
  responses: jsonResponses(ManifestSchema),
});

const metadataManifest = createRoute({
  method: "get",
  path: "/metadata/manifest",
  tags,
  summary: "The public client API key; no credentials",
  security: [],
  responses: jsonResponses(MetadataManifestSchema),
});

export const manifestRoutes: RouteModule<{
  config: Pick<Config, "DMS_STACK_NAME" | "DMS_PUBLIC_URL">;
  identity: Identity;
}> = (app, { config, identity }) => {
  const stack = config.DMS_STACK_NAME;
  const names = { Region: REGION, IdentityPool: `${REGION}:${stack}-no-cognito`, UserPool: `${REGION}_${stack}` };

  app.openapi(manifest, (c) =>
    c.json({ ApiGatewayRootUrl: config.DMS_PUBLIC_URL, StackName: stack, ...names, EsVersion: "5.6" }, 200),
  );

  app.openapi(metadataManifest, async (c) => {
    const key = await identity.publicApiKey();
    if (!key) throw new ApiError("NOT_FOUND", "No API key is provisioned as the public client key");
    return c.json({ ApiKey: key, ...names }, 200);
  });
};
