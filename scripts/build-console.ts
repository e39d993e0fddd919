// Builds the operator's console (console/src) into console/dist: one minified module, its CSS and the page.
// Run by `npm run build:console`, and by npm install and npm ci through `prepare`.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "console");
const out = join(root, "dist");
mkdirSync(out, { recursive: true });

await build({
  entryPoints: [join(root, "src", "main.tsx")],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  outfile: join(out, "app.js"),
  legalComments: "none",
  logLevel: "warning",
});
const uplotCss = readFileSync(join(root, "..", "node_modules", "uplot", "dist", "uPlot.min.css"), "utf8");
writeFileSync(join(out, "app.css"), uplotCss + "\n" + readFileSync(join(root, "src", "app.css"), "utf8"));
copyFileSync(join(root, "index.html"), join(out, "index.html"));

for (const file of ["app.js", "app.css", "index.html"]) {
  const bytes = readFileSync(join(out, file));
  console.log(`console/dist/${file}: ${statSync(join(out, file)).size} bytes, ${gzipSync(bytes).length} gzipped`);
}
