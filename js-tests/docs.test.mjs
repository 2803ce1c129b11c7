// The documentation as a whole (readme.test.mjs runs its code blocks): README.md, CONTRIBUTING.md
// and the guide, docs/*.md.
// - every relative link resolves: its file exists and its `#anchor` is a heading there (GitHub's
//   anchors); the README's and the guide's links stay inside README.md and docs/, which the
//   package ships (scripts/build.sh), so they resolve there too;
// - the README stays short, and its first screen links to install, the quick start, the cache,
//   the spread and Redis;
// - user docs name the article they follow on first mention, and carry no internal issue numbers.
// The package's README being this one is package.test.mjs's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const GUIDE = readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
/** What users read (and the package ships); CONTRIBUTING.md is for contributors. */
const USER_DOCS = ['README.md', ...GUIDE];
const ALL_DOCS = [...USER_DOCS, 'CONTRIBUTING.md'];
const ARTICLE_TITLE = 'What Happens When Eight Workers Share One Odds API Key?';
const README_MOST_LINES = 200;
const FIRST_SCREEN_LINES = 40;

const read = (file) => readFileSync(join(REPO, file), 'utf8');

/**
 * The text outside fenced blocks and inline code, same length and lines as the file (code
 * becomes spaces), so positions and line numbers still hold: a link or a `#` inside code is no
 * link and no heading.
 */
function prose(text) {
  const lines = text.split('\n');
  let fence = null;
  const out = lines.map((line) => {
    const open = /^\s*(`{3,})/.exec(line);
    if (fence) {
      if (open && line.trim() === fence) fence = null;
      return ' '.repeat(line.length);
    }
    if (open) { fence = open[1]; return ' '.repeat(line.length); }
    return line;
  }).join('\n');
  // Inline code, which may wrap onto the next line.
  return out.replace(/`[^`]*`/g, (code) => code.replace(/[^\n]/g, ' '));
}

const lineAt = (text, index) => text.slice(0, index).split('\n').length;

/** GitHub's anchors for a file's headings (github-slugger: lower case, punctuation dropped, spaces to '-', repeats numbered). */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  const lines = read(file).split('\n');
  let fence = false;
  for (const line of lines) {
    if (/^\s*```/.test(line)) fence = !fence;
    const m = !fence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** `{ file, line, text, target }` for every inline link of a file, outside code. */
function links(file) {
  const text = prose(read(file));
  return [...text.matchAll(/\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]*)\)/g)].map((m) => ({
    file, line: lineAt(text, m.index), text: m[1], target: m[2],
  }));
}

test('every relative link of the docs resolves: the file, and the heading its #anchor names', () => {
  const broken = [];
  for (const file of ALL_DOCS) {
    for (const link of links(file)) {
      if (/^[a-z][a-z+.-]*:/i.test(link.target)) continue; // https:, mailto:
      const [path, anchor] = link.target.split('#');
      const target = path ? posix.normalize(posix.join(posix.dirname(file), path)) : file;
      const at = `${file}:${link.line}: [${link.text}](${link.target})`;
      if (!existsSync(join(REPO, target))) { broken.push(`${at}: no file ${target}`); continue; }
      if (anchor === undefined) continue;
      if (statSync(join(REPO, target)).isDirectory() || !target.endsWith('.md')) { broken.push(`${at}: an #anchor in what is not a markdown file`); continue; }
      if (!anchors(target).has(anchor)) broken.push(`${at}: no heading of ${target} has the anchor #${anchor}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the README and the guide link only inside README.md and docs/, which the package ships', () => {
  const outside = [];
  for (const file of USER_DOCS) {
    for (const link of links(file)) {
      if (/^[a-z][a-z+.-]*:/i.test(link.target)) continue;
      const path = link.target.split('#')[0];
      if (!path) continue;
      const target = posix.normalize(posix.join(posix.dirname(file), path));
      if (target !== 'README.md' && !target.startsWith('docs/')) outside.push(`${file}:${link.line}: [${link.text}](${link.target}) leads to ${target}, not in the package: name it as text`);
    }
  }
  assert.deepEqual(outside, []);
});

test(`the README is at most ${README_MOST_LINES} lines, the guide has the rest`, () => {
  const lines = read('README.md').replace(/\n$/, '').split('\n').length;
  assert.ok(lines <= README_MOST_LINES, `README.md has ${lines} lines: move the detail to its page in docs/ and link to it`);
});

test(`the README's first ${FIRST_SCREEN_LINES} lines link to install, the quick start, the cache, the spread and Redis`, () => {
  const first = links('README.md').filter((l) => l.line <= FIRST_SCREEN_LINES);
  for (const [what, pattern] of [['install', /install/i], ['the quick start', /quick start/i], ['the cache', /cache/i],
    ['the spread', /spread/i], ['Redis', /redis/i]]) {
    assert.ok(first.some((l) => pattern.test(l.text)), `README.md: no link to ${what} in its first ${FIRST_SCREEN_LINES} lines`);
  }
});

test('the user docs name the article on first mention, and carry no internal issue numbers', () => {
  const problems = [];
  for (const file of ALL_DOCS) {
    const text = prose(read(file));
    // Paragraphs, headings left out: the first that says "article" names it by its title.
    const first = [...text.matchAll(/(?:^|\n\s*\n)([\s\S]*?)(?=\n\s*\n|$)/g)]
      .map((m) => ({ at: m.index + m[0].length - m[1].length, body: m[1].split('\n').filter((l) => !/^#{1,6}\s/.test(l)).join(' ') }))
      .find((p) => /\barticle/i.test(p.body));
    if (first && !first.body.replace(/\s+/g, ' ').includes(ARTICLE_TITLE)) {
      problems.push(`${file}:${lineAt(text, first.at)}: the first mention of the article does not name it (*${ARTICLE_TITLE}*)`);
    }
    if (!USER_DOCS.includes(file)) continue;
    for (const m of text.matchAll(/(?<![\w&])#\d+\b|\bissue #?\d*|\bthe issue's\b/gi)) {
      problems.push(`${file}:${lineAt(text, m.index)}: "${m[0]}" means nothing to a user: say what it is`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the guide\'s index lists every page of docs/', () => {
  const listed = new Set(links('docs/README.md').map((l) => posix.join('docs', l.target.split('#')[0])));
  const missing = GUIDE.filter((f) => f !== 'docs/README.md' && !listed.has(f));
  assert.deepEqual(missing, [], 'docs/README.md does not link these pages');
  assert.ok(links('README.md').some((l) => l.target === 'docs/README.md'), 'README.md does not link the guide\'s index');
});
