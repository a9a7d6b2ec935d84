#!/usr/bin/env node
// Entry point of the published CLI: runs the compiled sources (`npm run build`).
import '../dist/cli/main.js';
