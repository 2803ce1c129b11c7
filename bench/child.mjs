// Runs one benchmark module in its own process (fresh heap, no stray timers from the others) and
// sends its tables to bench/run.mjs over IPC.
const [name, ...flags] = process.argv.slice(2);
try {
  const mod = await import(`./${name}.mjs`);
  const tables = await mod.run({ quick: flags.includes('--quick') });
  const { build } = await import('./lib/util.mjs').then((u) => u.loadPkg());
  process.send({ ok: true, tables, build }, () => process.disconnect());
} catch (err) {
  process.send({ ok: false, error: String(err?.stack ?? err) }, () => process.disconnect());
}
