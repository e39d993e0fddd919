import { createRoute, z } from "@hono/zod-openapi";
import type { Files } from "../../files/index.js";
import type { RouteModule } from "../context.js";
import { jsonResponses } from "../openapi.js";

const tags = ["files"];
const flag = z.literal("true").optional().openapi({ description: "`true` only; leave it out otherwise" });

const Folder = {
  public: flag,
  root: flag,
  thingName: z.string().min(1).optional(),
  thingType: z.string().min(1).optional(),
};

const FileEntry = z
  .object({
    Key: z.string(),
    LastModified: z.string(),
    ETag: z.string(),
    Size: z.number(),
    url: z.string(),
    folder: z.string().optional(),
    thingName: z.string().optional(),
    thingType: z.string().optional(),
  })
  .openapi("FileEntry");

const ListResponse = z
  .object({
    continuationToken: z.string().optional(),
    nextContinuationToken: z.string().optional(),
    encodingType: z.literal("url"),
    isTruncated: z.boolean(),
    keyCount: z.number(),
    maxKeys: z.number(),
    prefix: z.string().optional(),
    files: z.array(FileEntry),
  })
  .openapi("FileList");

const UrlResponse = z.object({ fileName: z.string(), url: z.string() }).openapi("FileUrl");

const maxKeys = z
  .string()
  .regex(/^\d{1,4}$/, "an integer from 1 to 1000")
  .transform(Number)
  .refine((n) => n >= 1 && n <= 1000, "an integer from 1 to 1000")
  .optional();

const list = createRoute({
  method: "get",
  path: "/files",
  tags,
  summary: "LIST: files of exactly one of listAll, public, root, thingName, thingType (Files.READ)",
  request: {
    query: z.object({
      ...Folder,
      listAll: flag,
      prefix: z.string().optional(),
      maxKeys,
      continuationToken: z.string().min(1).optional(),
    }),
  },
  responses: jsonResponses(ListResponse),
});

const downloadUrl = createRoute({
  method: "get",
  path: "/files/download-url",
  tags,
  summary: "GENERATE_FILE_DOWNLOAD_URL: a signed GET URL valid 15 minutes (Files.READ)",
  request: { query: z.object({ fileName: z.string(), ...Folder }) },
  responses: jsonResponses(UrlResponse),
});

const uploadUrl = createRoute({
  method: "get",
  path: "/files/upload-url",
  tags,
  summary:
    "GENERATE_FILE_UPLOAD_URL: a signed PUT URL valid 15 minutes; the given content headers are bound (Files.CREATE)",
  request: {
    query: z.object({
      fileName: z.string(),
      ...Folder,
      contentDisposition: z.string().optional(),
      contentEncoding: z.string().optional(),
      contentMD5: z.string().optional(),
      contentType: z.string().optional(),
    }),
  },
  responses: jsonResponses(UrlResponse),
});

const remove = createRoute({
  method: "delete",
  path: "/files",
  tags,
  summary: "REMOVE: the newest version of a file, or all with allVersions=true (Files.DELETE)",
  request: { query: z.object({ fileName: z.string(), ...Folder, allVersions: z.enum(["true", "false"]).optional() }) },
  responses: jsonResponses(z.object({ fileName: z.string() })),
});

export const fileRoutes: RouteModule<{ files: Files }> = (app, { files }) => {
  app.openapi(list, async (c) => {
    const q = c.req.valid("query");
    return c.json(await files.list(c.get("principal"), { ...q, maxKeys: q.maxKeys ?? 1000 }), 200);
  });

  app.openapi(downloadUrl, (c) => {
    const { fileName, ...selector } = c.req.valid("query");
    return c.json(files.downloadUrl(c.get("principal"), selector, fileName), 200);
  });

  app.openapi(uploadUrl, (c) => {
    const { fileName, contentDisposition, contentEncoding, contentMD5, contentType, ...selector } =
      c.req.valid("query");
    const headers = { contentDisposition, contentEncoding, contentMD5, contentType };
    return c.json(files.uploadUrl(c.get("principal"), selector, fileName, headers), 200);
  });

  app.openapi(remove, async (c) => {
    const { fileName, allVersions, ...selector } = c.req.valid("query");
    const key = await files.remove(c.get("principal"), selector, fileName, allVersions === "true");
    return c.json({ fileName: key }, 200);
  });
};
