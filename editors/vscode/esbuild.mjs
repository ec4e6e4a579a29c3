// Bundles the extension into dist/extension.js (one file, vscode external) and,
// with --tests, each unit test into out/test/ for `node --test`.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

if (tests) {
  const entryPoints = readdirSync('test/unit')
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/unit/${f}`);
  await build({
    entryPoints,
    outdir: 'out/test',
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'inline',
    // The unit tests cover code that never imports the editor API.
    external: ['vscode'],
    logLevel: 'warning',
  });
} else {
  await build({
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
  });
}
