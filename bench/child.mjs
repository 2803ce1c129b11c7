// Runs one benchmark module in its own process (fresh heap, no stray timers from the others) and
// sends its tables to bench/run.mjs over IPC.
// A name `module:variant` runs `module.mjs` with that variant.
const [name, ...flags] = process.argv.slice(2);
try {
  const [file, variant] = name.split(':');
  const mod = await import(`./${file}.mjs`);
  const tables = await mod.run({ quick: flags.includes('--quick'), ...(variant ? { variant } : {}) });
  const { build } = await import('./lib/util.mjs').then((u) => u.loadPkg());
  process.send({ ok: true, tables, build }, () => process.disconnect());
} catch (err) {
  process.send({ ok: false, error: String(err?.stack ?? err) }, () => process.disconnect());
}
