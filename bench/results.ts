import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const RESULTS_FILE = join(dirname(fileURLToPath(import.meta.url)), "RESULTS.md");

/**
 * Replaces one benchmark's section of bench/RESULTS.md (between
 * `<!-- bench:<area> -->` and `<!-- /bench:<area> -->`), creating it if
 * absent, so each benchmark rewrites only its own figures.
 */
export function writeSection(area: string, body: string): void {
  const start = `<!-- bench:${area} -->`;
  const end = `<!-- /bench:${area} -->`;
  const section = `${start}\n${body.trim()}\n${end}`;
  const current = existsSync(RESULTS_FILE) ? readFileSync(RESULTS_FILE, "utf8") : "# Benchmark results\n";
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  const next =
    from >= 0 && to > from
      ? current.slice(0, from) + section + current.slice(to + end.length)
      : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(RESULTS_FILE, next);
}
