import os from "node:os";

export { writeSection } from "../results.js";

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

/** `uptime`'s three load averages: the box is shared, so every figure goes with the load it ran under. */
export const loadAverage = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
