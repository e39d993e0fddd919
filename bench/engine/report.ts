import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), "..", "RESULTS.md");

/** The header every benchmark prints: machine, Node, date and the command that reruns it. */
export function header(title: string, command: string): string {
  const cpu = os.cpus()[0]?.model ?? "unknown CPU";
  return [
    `## ${title}`,
    "",
    `- machine: ${cpu}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    `- Node ${process.version}, ${new Date().toISOString()}`,
    `- rerun: \`${command}\``,
    "",
  ].join("\n");
}

export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]): string => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Replaces this benchmark's section of bench/RESULTS.md, creating it if absent. */
export function writeSection(area: string, body: string): void {
  const start = `<!-- bench:${area} -->`;
  const end = `<!-- /bench:${area} -->`;
  const section = `${start}\n${body.trim()}\n${end}`;
  const current = existsSync(RESULTS) ? readFileSync(RESULTS, "utf8") : "# Benchmark results\n";
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  const next =
    from >= 0 && to > from
      ? current.slice(0, from) + section + current.slice(to + end.length)
      : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(RESULTS, next);
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
