// The text of describe(): the summary's fields, one line each, under the labels the checklist
// uses. Written here from the fields so the wasm module does not assemble the same strings twice.

const LABELS = [
  ['scope', 'scope'], ['store', 'store'], ['admission', 'admission'], ['feedback', 'feedback'],
  ['retry', 'retry'], ['backoff', 'backoff'], ['bounds', 'bounds'], ['retryBudget', 'retry budget'],
  ['quota', 'quota'], ['metrics', 'metrics'],
];

/** `odds-gate configuration` and a `- label: value` line per field, the allowance first. */
export function describeText(summary) {
  const { burst, perSecond } = summary.rate;
  const lines = [
    `bucket: burst ${burst} at ${perSecond} per second, per credential (set it to the provider's allowance for the key)`,
  ];
  for (const [key, label] of LABELS) if (key in summary) lines.push(`${label}: ${summary[key]}`);
  return `odds-gate configuration\n- ${lines.join('\n- ')}`;
}
