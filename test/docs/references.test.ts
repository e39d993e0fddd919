import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const documents = ["README.md", ...readdirSync(join(root, "docs")).map((name) => join("docs", name))].filter((name) =>
  name.endsWith(".md"),
);
/** A path into the project as the docs write it: `src/...`, `test/...`, `bench/...`, `scripts/...` or `docs/...`. */
const PROJECT_PATH = /(?<![\w/.-])(?:src|test|bench|scripts|docs)\/[\w./-]*[\w/]/g;

/** A relative path as the docs write it: `../x`, `../../x/y.md`. */
const RELATIVE_PATH = /(?<![\w/.-])(?:\.\.\/)+[\w./-]*[\w/]/g;
/** A Markdown file named anywhere in the text: `INTERFACE.md`, `docs/engine.md`. */
const MARKDOWN_NAME = /(?<![\w/.-])[\w./-]*[\w-]\.md\b/g;

/** The Markdown files of the repository, by name and by path from the root. */
function markdownFiles(dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === "node_modules" || e.name.startsWith(".")) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith(".md") ? [relative(root, path), e.name] : [];
  });
}

describe("documentation", () => {
  // A reader has the repository and nothing beside it: a reference out of it is a dead end.
  it.each(documents)("%s names no path outside the repository", (document) => {
    const text = readFileSync(join(root, document), "utf8");
    const outside = [...new Set(text.match(RELATIVE_PATH) ?? [])].filter((path) =>
      relative(root, resolve(dirname(join(root, document)), path)).startsWith(".."),
    );
    expect(outside).toEqual([]);
  });

  it.each(documents)("%s names only Markdown files the repository holds", (document) => {
    const text = readFileSync(join(root, document), "utf8");
    const held = new Set(markdownFiles());
    const missing = [...new Set(text.match(MARKDOWN_NAME) ?? [])].filter(
      (name) => !held.has(name.replace(/^\.\//, "")),
    );
    expect(missing).toEqual([]);
  });

  it.each(documents)("%s names only files and folders that exist", (document) => {
    const text = readFileSync(join(root, document), "utf8");
    const missing = [...new Set(text.match(PROJECT_PATH) ?? [])].filter(
      // Glob-like mentions (`test/**/*.test.ts`) are patterns, not paths.
      (path) => !path.includes("*") && !existsSync(join(root, path)),
    );
    expect(missing).toEqual([]);
  });
});
