import { getPathNoStrict } from "hono/utils/url";

/**
 * MIC clients address every operation under an API Gateway stage:
 * `{ApiGatewayRootUrl}/{StackName}/...`, and several hard-code `prod`. dms
 * answers each route under those prefixes too, by routing on the path with
 * the stage cut off (and a trailing slash dropped: `/manifest/` as MIC's
 * clients write it). The handlers, the authentication and `c.req.path` all see
 * the path without the stage, so no route is declared twice.
 */
export function stageNames(stackName: string): readonly string[] {
  return [...new Set([stackName, "prod"])];
}

export function stagePath(stages: readonly string[]): (request: Request) => string {
  const prefixes = stages.map((s) => `/${s}`);
  return (request) => {
    const path = getPathNoStrict(request);
    for (const prefix of prefixes) {
      if (path === prefix) return "/";
      if (path.startsWith(`${prefix}/`)) return path.slice(prefix.length);
    }
    return path;
  };
}

/**
 * A stage equal to the first segment of a route would hide that route under
 * the stage (`/rules/...` with a stack named `rules`); refuse to start then.
 */
export function checkStages(stages: readonly string[], routePaths: Iterable<string>): void {
  const firsts = new Set([...routePaths].map((p) => p.split("/")[1]).filter((s): s is string => !!s));
  for (const stage of stages) {
    if (firsts.has(stage)) {
      throw new Error(`DMS_STACK_NAME: "${stage}" is the first path segment of a route; choose another stack name`);
    }
  }
}
