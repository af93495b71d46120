// Parse each Mermaid file with mermaid's own parser; exit 1 naming the first that does not parse.
// Usage: node mermaid_parse.mjs PREFIX FILE...  (PREFIX: the folder whose node_modules holds mermaid and jsdom)
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [prefix, ...files] = process.argv.slice(2);
const require = createRequire(resolve(prefix, "parse.js"));
const { JSDOM } = require("jsdom");
const { window } = new JSDOM("");
globalThis.window = window; // mermaid sanitises labels with DOMPurify, which needs a DOM
globalThis.document = window.document;
const { default: mermaid } = await import(pathToFileURL(require.resolve("mermaid")).href);
for (const file of files) {
  try {
    const { diagramType } = await mermaid.parse(readFileSync(file, "utf8"));
    console.log(`${file}: ${diagramType}`);
  } catch (error) {
    console.error(`${file}: ${error.message ?? error}`);
    process.exit(1);
  }
}
