import { RE2JS } from "re2js";

/**
 * Every pattern a caller sends (a `wildcard`, `regexp` or `prefix` query, a
 * terms aggregation's `include`/`exclude`, a `_source` filter) is compiled
 * here and nowhere else. The engine is RE2 (re2js): an automaton simulation
 * whose time is linear in the length of the matched string whatever the
 * pattern, so `(a+)+b` or `*a*a*a*a*b` costs what `ab` costs. V8's own
 * `RegExp` backtracks and must never see a caller's pattern; eslint refuses
 * `new RegExp(` on anything but a literal outside this folder.
 */

/** A compiled pattern; `test` answers whether the whole string matches, as a RegExp's would. */
export interface Pattern {
  test(s: string): boolean;
}

/**
 * Characters a regular expression or wildcard may have: ES 6's
 * `index.max_regex_length` default (ES 5.6 has no limit). It bounds the size
 * of the automaton, which is what the match time is linear in.
 */
export const MAX_PATTERN_LENGTH = 1000;

/** Makes the caller's error for an unusable pattern: the caller names the property. */
export type Invalid = (why: string) => Error;

/**
 * A regular expression matched against the whole string, in RE2 syntax (the
 * subset of Perl/JS syntax that can be matched in linear time: no
 * backreferences, no lookaround). `.` matches any character, newlines too,
 * as in Lucene's regular expressions.
 */
export function regexpPattern(source: string, invalid: Invalid): Pattern {
  checkLength(source, invalid);
  const re = compile(`(?:${source})`, invalid);
  return { test: (s) => re.matches(s) };
}

/**
 * A Lucene wildcard: `*` is any run of characters, `?` one character (unless
 * `questionMark` is false, as in `_source` patterns, where only `*` is
 * special), `\` escapes the next character. Everything else is literal.
 */
export function wildcardPattern(source: string, invalid: Invalid, questionMark = true): Pattern {
  checkLength(source, invalid);
  const special = questionMark ? /[\\*?]/ : /\*/;
  // The common shapes need no automaton: `abc`, `abc*`, `*`.
  if (!special.test(source)) return { test: (s) => s === source };
  const head = source.slice(0, -1);
  if (source.endsWith("*") && !special.test(head)) return { test: (s) => s.startsWith(head) };
  let regex = "";
  let literal = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\" && questionMark && i + 1 < source.length) literal += source[++i];
    else if (c === "*" || (c === "?" && questionMark)) {
      regex += RE2JS.quote(literal) + (c === "*" ? ".*" : ".");
      literal = "";
    } else literal += c;
  }
  const re = compile(regex + RE2JS.quote(literal), invalid);
  return { test: (s) => re.matches(s) };
}

/** A prefix test: no pattern at all, a string comparison. */
export function prefixPattern(prefix: string): Pattern {
  return { test: (s) => s.startsWith(prefix) };
}

function checkLength(source: string, invalid: Invalid): void {
  if (source.length > MAX_PATTERN_LENGTH)
    throw invalid(`is ${source.length} characters long, more than the ${MAX_PATTERN_LENGTH} a pattern may have`);
}

function compile(regex: string, invalid: Invalid): RE2JS {
  try {
    return RE2JS.compile(regex, RE2JS.DOTALL);
  } catch (err) {
    throw invalid(`is not a valid regular expression: ${err instanceof Error ? err.message : String(err)}`);
  }
}
