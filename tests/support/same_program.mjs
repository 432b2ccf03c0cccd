// Whether each minified module still is its source's program, as far as a minifier that renames
// local names can be checked without running it: V8 compiles the minified module (as
// `node --check` would, in this one process), and acorn finds in both the same imports (module
// and names), the same exports, and the same property names (a minifier renames variables,
// never properties). The browser tests then run the dashboard as served. Usage:
// node --experimental-vm-modules same_program.mjs SOURCE MINIFIED ...
// Prints one line per pair that differs or does not parse; exits 1 if any does.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vm from "node:vm";

const require = createRequire(import.meta.url);
const acorn = require(process.env.ACORN);

const nameOf = (node) => (node.type === "Identifier" ? node.name : String(node.value));

/** The module's interface and the property names it uses, as sorted lists. */
function outline(path) {
  const tree = acorn.parse(readFileSync(path, "utf8"), { ecmaVersion: "latest", sourceType: "module" });
  const imports = [], exports = [], properties = new Set();
  for (const node of tree.body) {
    if (node.type === "ImportDeclaration") {
      for (const s of node.specifiers) imports.push(`${node.source.value} ${s.imported ? nameOf(s.imported) : s.type}`);
      if (!node.specifiers.length) imports.push(node.source.value);
    } else if (node.type === "ExportNamedDeclaration") {
      for (const s of node.specifiers) exports.push(nameOf(s.exported));
      const d = node.declaration;
      if (d?.id) exports.push(d.id.name);
      for (const v of d?.declarations || []) exports.push(v.id.name);
    } else if (node.type === "ExportDefaultDeclaration") exports.push("default");
    else if (node.type === "ExportAllDeclaration") exports.push(`* ${node.source.value}`);
  }
  const walk = (node) => {
    if (!node || typeof node.type !== "string") return;
    if (node.type === "MemberExpression" && (!node.computed || typeof node.property.value === "string")) properties.add(nameOf(node.property));
    if (node.type === "Property" && !node.computed && !node.shorthand) properties.add(nameOf(node.key));
    if (node.type === "Property" && node.shorthand) properties.add(node.key.name);
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === "object") walk(value);
    }
  };
  walk(tree);
  return { imports: imports.sort(), exports: exports.sort(), properties: [...properties].sort() };
}

const args = process.argv.slice(2);
let failed = 0;
for (let i = 0; i < args.length; i += 2) {
  try {
    new vm.SourceTextModule(readFileSync(args[i + 1], "utf8")); // V8's parser: throws a SyntaxError
    const [source, minified] = [outline(args[i]), outline(args[i + 1])];
    for (const part of ["imports", "exports", "properties"]) {
      const [a, b] = [source[part], minified[part]];
      const lost = a.filter((x) => !b.includes(x)), added = b.filter((x) => !a.includes(x));
      if (lost.length || added.length) throw new Error(`its ${part} differ: lost ${lost.join(", ") || "none"}; added ${added.join(", ") || "none"}`);
    }
  } catch (error) {
    failed += 1;
    console.log(`${args[i + 1]}: ${error.message}`);
  }
}
process.exit(failed ? 1 : 0);
