/**
 * Builds a benchmark's JVM peer (bench/engine/peer, bench/kafka/streams) with the machine's mvn, once:
 * offline after the first resolve, into a cache named by a hash of the pom and the sources, as
 * scripts/lib.sh caches the service jars. A build goes to a temp dir renamed into place when whole,
 * so an interrupted build or two concurrent first runs never leave half a cache.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/** Why the peer did not run (no java or mvn, Maven Central refused a jar, the JVM failed), word for word. */
export interface PeerSkipped {
  skipped: string;
}

export interface MavenProject {
  pom: string;
  /** Every directory of sources the build compiles (files directly in each, hashed for the cache). */
  sources: string[];
  cache: string;
}

/** The compiled classes and the dependency classpath, from the cache when the pom and sources are unchanged. */
export function buildPeer(project: MavenProject): { classpath: string } | PeerSkipped {
  const hash = createHash("sha256");
  hash.update(readFileSync(project.pom));
  for (const dir of project.sources)
    for (const f of readdirSync(dir).sort()) hash.update(f).update(readFileSync(join(dir, f)));
  const out = join(project.cache, hash.digest("hex").slice(0, 16));
  const classpath = (): string => `${join(out, "classes")}:${readFileSync(join(out, "classpath.txt"), "utf8").trim()}`;
  if (existsSync(join(out, ".complete"))) return { classpath: classpath() };
  mkdirSync(project.cache, { recursive: true });
  const tmp = mkdtempSync(join(project.cache, ".build-"));
  try {
    const goals = [
      "-q",
      "-B",
      "-f",
      project.pom,
      `-DpeerBuildDir=${tmp}`,
      "compile",
      "dependency:build-classpath",
      `-Dmdep.outputFile=${join(tmp, "classpath.txt")}`,
    ];
    // Offline first: after the first resolve everything is in ~/.m2 and Maven need not ask Central.
    let mvn = spawnSync("mvn", ["-o", ...goals], { encoding: "utf8" });
    if (mvn.error) return { skipped: `mvn: ${mvn.error.message}` };
    if (mvn.status !== 0) mvn = spawnSync("mvn", goals, { encoding: "utf8" });
    if (mvn.status !== 0) return { skipped: `mvn could not build ${project.pom}: ${tail(mvn.stdout + mvn.stderr)}` };
    writeFileSync(join(tmp, ".complete"), "");
    try {
      renameSync(tmp, out);
    } catch (e) {
      // Another run finished first: its cache is as good as ours.
      if (!existsSync(join(out, ".complete"))) throw e;
    }
    return { classpath: classpath() };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The last lines of a failed process's output, for a skip reason. */
export function tail(text: string): string {
  return text.trim().split("\n").slice(-15).join("\n");
}
