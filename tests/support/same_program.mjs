// Whether each minified module is the same program as its source: both parsed by acorn as ES
// modules, their syntax trees compared without positions (comments and layout are not in a tree,
// a semicolon inserted at another place is); each minified module is also compiled by V8 (as
// `node --check` would, in this one process). Usage:
// node --experimental-vm-modules same_program.mjs SOURCE MINIFIED ...
// Prints one line per pair that differs or does not parse; exits 1 if any does.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vm from "node:vm";

const require = createRequire(import.meta.url);
const acorn = require(process.env.ACORN);
const tree = (path) =>
  JSON.stringify(
    acorn.parse(readFileSync(path, "utf8"), { ecmaVersion: "latest", sourceType: "module" }),
    (key, value) => (key === "start" || key === "end" ? undefined : value),
  );
const args = process.argv.slice(2);
let failed = 0;
for (let i = 0; i < args.length; i += 2) {
  try {
    new vm.SourceTextModule(readFileSync(args[i + 1], "utf8")); // V8's parser: throws a SyntaxError
    if (tree(args[i]) !== tree(args[i + 1])) throw new Error("the syntax trees differ");
  } catch (error) {
    failed += 1;
    console.log(`${args[i + 1]}: ${error.message}`);
  }
}
process.exit(failed ? 1 : 0);
