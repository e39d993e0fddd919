import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Runs `scripts/<name> start|stop` (the scripts that run real peers for tests:
 * Kafka, the schema registry) and, for start, returns the value of the
 * `<variable>=...` line the script prints last.
 */
export async function runServiceScript(
  name: string,
  command: "start" | "stop",
  variable?: string,
  env: Record<string, string> = {},
): Promise<string> {
  const script = fileURLToPath(new URL(`../../scripts/${name}`, import.meta.url));
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync("bash", [script, command], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      // The scripts bound their own waits; this is only a backstop.
      timeout: 600_000,
      maxBuffer: 10 * 1024 * 1024,
    }));
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`scripts/${name} ${command} failed: ${e.message}\n${e.stderr ?? ""}`, { cause: err });
  }
  if (!variable) return stdout;
  const line = stdout
    .trim()
    .split("\n")
    .reverse()
    .find((l) => l.startsWith(`${variable}=`));
  if (!line) throw new Error(`scripts/${name} ${command} printed no ${variable} line:\n${stdout}`);
  return line.slice(variable.length + 1).trim();
}
