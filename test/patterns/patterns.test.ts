import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_PATTERN_LENGTH, regexpPattern, wildcardPattern, type Pattern } from "../../src/patterns/index.js";

/** Caller patterns: the meaning of each syntax, the refusals, and time linear in the input whatever the pattern. */

const invalid = (why: string): Error => new Error(`[where] ${why}`);

/** Wildcard matching by dynamic programming: the reference the compiled pattern must agree with. */
function reference(pattern: string, s: string): boolean {
  const tokens: { any?: boolean; one?: boolean; ch?: string }[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\" && i + 1 < pattern.length) tokens.push({ ch: pattern[++i]! });
    else if (c === "*") tokens.push({ any: true });
    else if (c === "?") tokens.push({ one: true });
    else tokens.push({ ch: c });
  }
  let row = new Array<boolean>(s.length + 1).fill(false);
  row[0] = true;
  for (const t of tokens) {
    const next = new Array<boolean>(s.length + 1).fill(false);
    for (let j = 0; j <= s.length; j++) {
      if (t.any) next[j] = row[j]! || (j > 0 && next[j - 1]!);
      else if (j > 0 && row[j - 1]! && (t.one || t.ch === s[j - 1])) next[j] = true;
    }
    row = next;
  }
  return row[s.length]!;
}

describe("patterns", () => {
  it("a wildcard agrees with the reference matcher on any pattern and string", () => {
    const alphabet = fc.constantFrom("a", "b", ".", "(", "+", "\n", "*", "?", "\\", "é");
    fc.assert(
      fc.property(
        fc.string({ unit: alphabet, maxLength: 12 }),
        fc.string({ unit: alphabet, maxLength: 16 }),
        (p, s) => {
          expect(wildcardPattern(p, invalid).test(s)).toBe(reference(p, s));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("_source patterns treat only * as special", () => {
    const p = wildcardPattern("state.?x*", invalid, false);
    expect(p.test("state.?xyz")).toBe(true);
    expect(p.test("state.axyz")).toBe(false);
  });

  it("a regular expression matches the whole string, . includes newlines", () => {
    const p = regexpPattern("a.c|d+", invalid);
    expect(["abc", "a\nc", "ddd"].map((s) => p.test(s))).toEqual([true, true, true]);
    expect(["xabc", "abcx", ""].map((s) => p.test(s))).toEqual([false, false, false]);
  });

  it("what RE2 cannot match in linear time is refused, naming the property", () => {
    for (const p of ["(a)\\1", "(?=a)", "(?<=a)b", "(a", "[z-a]"])
      expect(() => regexpPattern(p, invalid)).toThrow(/^\[where\] is not a valid regular expression/);
    expect(() => wildcardPattern("*".repeat(MAX_PATTERN_LENGTH + 1), invalid)).toThrow(/\[where\].*1000/);
  });

  it("backtracking shapes answer on long inputs (a backtracking engine would not finish within the test)", () => {
    const input = "a".repeat(20_000);
    const shapes: [Pattern, boolean][] = [
      [regexpPattern("(a+)+b", invalid), true],
      [regexpPattern("(a|aa)*c", invalid), false],
      [regexpPattern("(.*a){20}b", invalid), true],
      [wildcardPattern("*a*a*a*a*a*a*b", invalid), true],
    ];
    for (const [p, endsWithB] of shapes) {
      expect(p.test(input)).toBe(false);
      expect(p.test(`${input}b`)).toBe(endsWithB);
    }
  });
});
