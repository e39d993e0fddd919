import js from "@eslint/js";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import tseslint from "typescript-eslint";

// Every folder under src/ is a capability; another capability is reached only through its
// index.ts, so a folder's inside can change without touching its callers.
const capabilities = readdirSync(join(dirname(fileURLToPath(import.meta.url)), "src"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .join("|");

// An array spread into a call's arguments (Math.min(...values), list.push(...more)) throws RangeError
// past some 120,000 elements: with a caller's data (a document's array, a histogram's buckets, a
// rule set's cells) that is a request failing for its size. Loops instead.
const unboundedSpread = [
  {
    selector: "CallExpression[callee.object.name='Math'] > SpreadElement",
    message: "Math.min/max(...values) throws past ~120,000 values: loop over them.",
  },
  {
    selector: "CallExpression[callee.property.name=/^(push|unshift|splice)$/] > SpreadElement",
    message: "push(...more) throws past ~120,000 elements: loop, or concat.",
  },
];

export default tseslint.config(
  { ignores: ["node_modules/", "data/", "coverage/", "dist/", ".kafka/", "console/dist/", "test-artifacts/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
    },
  },
  {
    files: ["src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: `^(\\.\\./)+(${capabilities})/(?!index\\.js$)`,
              message: "Import another capability through its index.ts, not past its face.",
            },
            {
              regex: `^\\./(${capabilities})/(?!index\\.js$)`,
              message: "Import a capability through its index.ts, not past its face.",
            },
          ],
        },
      ],
    },
  },
  {
    // V8's RegExp backtracks: a pattern built at run time may hold a caller's text and take
    // exponential time. Those go through src/patterns (RE2, linear time); constants are literals.
    files: ["src/**/*.ts"],
    ignores: ["src/patterns/**"],
    rules: {
      "no-restricted-syntax": [
        "error",
        ...unboundedSpread,
        {
          selector: ":matches(NewExpression, CallExpression)[callee.name='RegExp'][arguments.0.type!='Literal']",
          message:
            "RegExp built at run time: compile caller patterns with src/patterns (linear time); a constant pattern is a literal.",
        },
      ],
    },
  },
  {
    files: ["src/patterns/**/*.ts"],
    rules: { "no-restricted-syntax": ["error", ...unboundedSpread] },
  },
);
