// The secret scan `vsce package` makes, on the files named on standard input (one path per line,
// relative to the current folder: run from editors/vscode). Exits 1 naming each finding.
// Each content is scanned once: the bundled Pythons hold mostly the same files, and with
// `--known FILE` the contents found clean by an earlier call (another platform) are skipped.
//
// scripts/vscode-bundle.sh runs it on every text file of a platform package and then packages
// with vsce's own scan turned off: vsce reads every file, the bundled Pythons' binaries included
// (shared libraries from PyPI wheels and bytecode compiled from the scanned sources), which took
// about two minutes per platform for about 3,600 files, nearly all of it in those binaries.
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");

let secretLint;
try {
  secretLint = require(path.resolve("node_modules/@vscode/vsce/out/secretLint.js"));
} catch (error) {
  console.error(`vsce's secret scan was not found (${error.message}); run from editors/vscode after npm ci`);
  process.exit(2);
}

async function main() {
  const files = fs.readFileSync(0, "utf8").split("\n").filter(Boolean);
  if (files.length === 0) {
    console.error("no files to scan were given");
    process.exit(2);
  }
  const knownAt = process.argv[2] === "--known" ? process.argv[3] : undefined;
  const known = new Set(knownAt && fs.existsSync(knownAt) ? fs.readFileSync(knownAt, "utf8").split("\n") : []);
  const dotEnv = files.filter((f) => /(^|\/)\.env(\..*)?$/.test(f));
  const unseen = new Map(); // content digest -> one path holding it
  for (const file of files) {
    const digest = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
    if (!known.has(digest) && !unseen.has(digest)) unseen.set(digest, file);
  }
  const result = unseen.size > 0 ? await secretLint.lintFiles([...unseen.values()], true, true) : { ok: true, results: [] };
  const findings = result.results.map(secretLint.prettyPrintLintResult);
  if (dotEnv.length > 0) findings.push(`.env files must not be packaged: ${dotEnv.join(", ")}`);
  if (!result.ok || findings.length > 0) {
    console.error(`secrets found in the package:\n${findings.join("\n")}`);
    process.exit(1);
  }
  if (knownAt) fs.appendFileSync(knownAt, [...unseen.keys()].map((d) => d + "\n").join(""));
  console.log(`secret scan: ${files.length} files (${unseen.size} contents not scanned before), nothing found`);
}

main().catch((error) => {
  console.error(`the secret scan failed: ${error.stack || error}`);
  process.exit(2);
});
