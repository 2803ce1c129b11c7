// Main demo: the same eight naive workers, first with plain fetch, then with odds-gate's shared
// gate, against a local fake Odds API (127.0.0.1 only). The demo itself ships in the package
// (pkg-template/demo/eight-workers.js, also `npx odds-gate demo`); this runs the built copy.

// Load the built package first so a missing build fails fast, before any 3 s run.
let runDemo;
try {
  ({ runDemo } = await import('../pkg/demo/eight-workers.js'));
  if (typeof runDemo !== 'function') throw new Error('pkg/demo/eight-workers.js does not export runDemo');
} catch (err) {
  console.error('odds-gate package not found or unusable at pkg/.');
  console.error('Build it first with: bash scripts/build.sh');
  console.error(`(${err.code ?? 'error'}: ${err.message})`);
  process.exit(1);
}

await runDemo();
