#!/usr/bin/env node
/**
 * Prints the code block that follows `<!-- install: NAME -->` in README.md, so that the fresh-app
 * step runs the README's own install commands: when one changes, so does what CI runs.
 * Usage: node readme-install.js NAME
 */
'use strict';
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const name = process.argv[2];
const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
const marker = `<!-- install: ${name} -->`;
const at = readme.indexOf(marker);
if (!name || at < 0) {
  console.error(`README.md has no block marked ${marker}`);
  process.exit(1);
}
const block = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(readme.slice(at + marker.length));
if (!block) {
  console.error(`No code block follows ${marker} in README.md`);
  process.exit(1);
}
process.stdout.write(block[1]);
