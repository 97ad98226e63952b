#!/usr/bin/env node
'use strict';
// The command line is compiled with the library: see lib/cli/main.ts and docs/cli.md.
require('../dist/cli/main.js').main();
