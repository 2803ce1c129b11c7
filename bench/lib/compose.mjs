// BENCHMARKS.md's shape: a short header, one summary table (each generated table's target, its
// verdict with the figure, and the build and date that measured it), then the generated
// tables. The hand-written analysis lives in docs/performance.md and the log of partial reruns
// in bench/RERUNS.md, so this file holds only what a run prints.

const SUMMARY = '## Summary: every target, its figure and verdict';

/** A section's title: its first line without the `## `. */
export const titleOf = (section) => section.split('\n')[0].replace(/^## /, '').trim();

/** The anchor GitHub gives a heading. */
export const anchor = (title) => title.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

/** One row of the summary for a generated section: title (linked), target, verdict, build, date. */
function summaryRow(section) {
  const title = titleOf(section);
  const tv = /\*\*Target:\*\* ([\s\S]*?)\. \*\*Verdict:\*\* ([\s\S]*?)\.\n/.exec(section);
  const build = /package: wasm sha256 (\w+), built (\S+)/.exec(section);
  const cell = (text) => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
  return [`[${cell(title)}](#${anchor(title)})`, tv ? cell(tv[1]) : '-', tv ? cell(tv[2]) : '-',
    build ? build[1] : '-', build ? build[2].slice(0, 10) : '-'];
}

/** The summary table of `sections` (the generated ones, `## ` first lines), as markdown. */
export function summary(sections) {
  const rows = sections.filter((s) => titleOf(s) !== titleOf(SUMMARY)).map(summaryRow);
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [SUMMARY, '',
    'One row per table below: what it is held to, and what the run measured (verdicts read "met" or "MISSED", with the figures).', '',
    line(['table', 'target', 'verdict (the figure)', 'build', 'date']), line([':---', ':---', ':---', ':---', ':---']),
    ...rows.map(line), ''].join('\n');
}

/** The whole file: `head` (the header lines), the summary, then `sections`. */
export function compose(head, sections) {
  const kept = sections.filter((s) => titleOf(s) !== titleOf(SUMMARY)).map((s) => `${s.trimEnd()}\n`);
  return `${head.trimEnd()}\n\n${summary(kept)}\n${kept.join('\n')}`;
}
