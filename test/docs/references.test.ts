import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const documents = ["README.md", ...readdirSync(join(root, "docs")).map((name) => join("docs", name))].filter((name) =>
  name.endsWith(".md"),
);
/** A path into the project as the docs write it: `src/...`, `test/...`, `bench/...`, `scripts/...` or `docs/...`. */
const PROJECT_PATH = /(?<![\w/.-])(?:src|test|bench|scripts|docs)\/[\w./-]*[\w/]/g;

describe("documentation", () => {
  it.each(documents)("%s names only files and folders that exist", (document) => {
    const text = readFileSync(join(root, document), "utf8");
    const missing = [...new Set(text.match(PROJECT_PATH) ?? [])].filter(
      // Glob-like mentions (`test/**/*.test.ts`) are patterns, not paths.
      (path) => !path.includes("*") && !existsSync(join(root, path)),
    );
    expect(missing).toEqual([]);
  });
});
