//! The core's folders depend one way, and no two of its files import each other: a reader (and
//! the compiler's incremental builds) can take each folder as standing on the ones before it.
//! The order is [`ORDER`]: a folder may use only folders to its left (and `Millis`, at the
//! core's root). Within a folder, a file may use another only if that one does not use it back:
//! what both need goes to the lower file, or to a small file named for what it holds. That holds
//! for a module and the files it declares too (`gate/mod.rs` and `gate/queue.rs`), with no
//! exception: a child that adds `impl Gate` blocks (`gate/admit.rs`) names `Gate` one way, since
//! the parent calls those methods without naming the child; a parent that re-exports such a
//! child's items names it back (a re-export counts as a `use`).
//!
//! The check reads `src/core/**/*.rs` as tokens (comments, strings and doc links skipped) and
//! finds the core paths each file names: `use` trees (`crate::core::..`, `super::..`,
//! `self::..`, a child module's name), and the same paths written inline in code. A path goes
//! to the file of its longest module prefix (`crate::core::gate::queue::Lane` is
//! `gate/queue.rs`; `crate::core::gates::Gates` is `gates/mod.rs`). Inline `mod name { .. }`
//! blocks (tests) count as their file. Paths through `pub use` re-exports count where they are
//! written, not where the item was first defined.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The folders of `src/core`, each standing on those to its left.
const ORDER: [&str; 7] = [
    "base",
    "parse",
    "rules",
    "authority",
    "gate",
    "gates",
    "sim",
];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

/// `src`'s tokens with their line numbers: identifiers, `::` and single punctuation. Comments,
/// string and character literals are dropped; so are numbers' insides and lifetimes' quotes,
/// which no path can hold.
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    // Skips a quoted literal opened at `i` (`"` or `'`), honouring escapes; returns its end.
    let skip_quoted = |mut i: usize, quote: char, line: &mut usize| {
        i += 1;
        while i < c.len() && c[i] != quote {
            if c[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                match (at(i), at(i + 1)) {
                    ('/', '*') => (depth, i) = (depth + 1, i + 2),
                    ('*', '/') => (depth, i) = (depth - 1, i + 2),
                    ('\0', _) => break,
                    (nl, _) => (line, i) = (line + usize::from(nl == '\n'), i + 1),
                }
                if depth == 0 {
                    break;
                }
            }
        } else if ch == '"' {
            i = skip_quoted(i, '"', &mut line);
        } else if ch == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            i = skip_quoted(i, '\'', &mut line);
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let hashes = (i..).take_while(|&j| at(j) == '#').count();
            if matches!(word.as_str(), "r" | "br") && at(i + hashes) == '"' {
                // A raw string: r"..", r#".."# (not a raw identifier, r#type).
                let close: String = std::iter::once('"')
                    .chain("#".repeat(hashes).chars())
                    .collect();
                let rest: String = c[i + hashes + 1..].iter().collect();
                let len = rest.find(&close).map_or(rest.len(), |e| e + close.len());
                line += rest[..len].matches('\n').count();
                i += hashes + 1 + rest[..len].chars().count();
            } else if word == "b" && matches!(at(i), '"' | '\'') {
                i = skip_quoted(i, at(i), &mut line);
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The paths a `use` tree starting at `toks[i]` names, each as its segments (a glob ends in
/// `*`), and the index after the tree.
fn use_tree(toks: &[(Tok, usize)], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix.to_vec();
    let mut paths = Vec::new();
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Punct('{')) => {
                i += 1;
                while !matches!(toks.get(i).map(|t| &t.0), Some(Tok::Punct('}')) | None) {
                    let (inner, next) = use_tree(toks, i, &path);
                    paths.extend(inner);
                    i = next;
                    if toks.get(i).map(|t| &t.0) == Some(&Tok::Punct(',')) {
                        i += 1;
                    }
                }
                return (paths, i + 1);
            }
            Some(Tok::Punct('*')) => {
                path.push("*".into());
                i += 1;
            }
            // `self` inside braces names the prefix itself.
            Some(Tok::Ident(w))
                if w == "self" && !path.is_empty() && path.len() == prefix.len() =>
            {
                i += 1
            }
            Some(Tok::Ident(w)) if w == "as" => i += 2,
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                i += 1;
            }
            Some(Tok::Sep) => i += 1,
            _ => break,
        }
    }
    paths.push(path);
    (paths, i)
}

/// A file of the core: its path under `src/core` and its module's segments under `core`.
struct Source {
    name: String,
    module: Vec<String>,
    text: String,
}

impl Source {
    /// The file `name` (under `src/core`) holding `text`.
    fn new(name: String, text: String) -> Source {
        let mut module: Vec<String> = name
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        Source { name, module, text }
    }
}

fn sources(dir: &Path, out: &mut Vec<Source>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
            let name = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push(Source::new(name, fs::read_to_string(&path).unwrap()));
        }
    }
}

/// Each core module `file` names (as its segments under `core`), with the line it is named on.
fn named(file: &Source, modules: &[Vec<String>]) -> Vec<(Vec<String>, usize)> {
    let toks = tokens(&file.text);
    let children = |of: &[String]| -> Vec<String> {
        modules
            .iter()
            .filter(|m| m.len() == of.len() + 1 && m.starts_with(of))
            .map(|m| m[of.len()].clone())
            .collect()
    };
    // Makes `path` (as written in the module `here`) absolute, if it names the core.
    let resolve = |path: &[String], here: &[String]| -> Option<Vec<String>> {
        let mut at = here.to_vec();
        let mut rest = path;
        match path.first()?.as_str() {
            "crate" if path.get(1).is_some_and(|s| s == "core") => {
                at.clear();
                rest = &path[2..];
            }
            "self" => rest = &path[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop()?;
                    rest = &rest[1..];
                }
            }
            first if children(here).iter().any(|c| c == first) => {}
            _ => return None,
        }
        at.extend(rest.iter().cloned());
        Some(at)
    };
    let mut found = Vec::new();
    // Inline modules open here: their name and the brace depth they close at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let here: Vec<String> = file
            .module
            .iter()
            .chain(inline.iter().map(|m| &m.0))
            .cloned()
            .collect();
        let after_sep = i > 0 && toks[i - 1].0 == Tok::Sep;
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|m| m.1 == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                }
            }
            Tok::Ident(w) if w == "use" && !after_sep => {
                let (paths, next) = use_tree(&toks, i + 1, &[]);
                for path in paths {
                    found.extend(resolve(&path, &here).map(|p| (p, toks[i].1)));
                }
                i = next;
                continue;
            }
            Tok::Ident(_) if !after_sep && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Sep) => {
                let mut path = Vec::new();
                let mut j = i;
                while let Some((Tok::Ident(w), _)) = toks.get(j) {
                    path.push(w.clone());
                    j += 1;
                    if toks.get(j).map(|t| &t.0) != Some(&Tok::Sep) {
                        break;
                    }
                    j += 1;
                }
                found.extend(resolve(&path, &here).map(|p| (p, toks[i].1)));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Where the core's files break the order, each problem as one line naming file and line.
fn problems() -> Vec<String> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core"),
        &mut files,
    );
    problems_in(&files)
}

/// Where `files` break the order.
fn problems_in(files: &[Source]) -> Vec<String> {
    let modules: Vec<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    // (user, used) -> the first line the user names it on.
    let mut edges: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (a, file) in files.iter().enumerate() {
        for (path, line) in named(file, &modules) {
            let b = (0..files.len())
                .filter(|&b| path.starts_with(&files[b].module))
                .max_by_key(|&b| files[b].module.len())
                .unwrap();
            if a != b {
                edges.entry((a, b)).or_insert(line);
            }
        }
    }
    let mut problems = Vec::new();
    let folder = |f: usize| -> Option<usize> {
        let name = files[f].module.first()?;
        let rank = ORDER.iter().position(|o| o == name);
        Some(rank.unwrap_or_else(|| panic!("src/core/{name}/ is not in ORDER: place it there")))
    };
    for (&(a, b), &line) in &edges {
        let (user, used) = (&files[a].name, &files[b].name);
        // The root (`Millis`) is below every folder.
        if folder(b).is_some_and(|to| folder(a).is_none_or(|from| to > from)) {
            problems.push(format!(
                "src/core/{user}:{line} uses src/core/{used}, a folder to its right in {ORDER:?}"
            ));
        }
        if a < b {
            if let Some(back) = edges.get(&(b, a)) {
                problems.push(format!(
                    "src/core/{user}:{line} and src/core/{used}:{back} import each other"
                ));
            }
        }
    }
    problems
}

#[test]
fn folders_depend_one_way_and_no_two_files_import_each_other() {
    let problems = problems();
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn a_parent_and_its_child_that_import_each_other_are_caught() {
    let file = |name: &str, text: &str| Source::new(name.into(), text.into());
    let files = [
        file(
            "gate/mod.rs",
            "mod queue;\nmod respond;\nuse self::queue::Queue;\npub type CallId = u64;\n\
             pub struct Gate(Queue);\n",
        ),
        file("gate/queue.rs", "use super::CallId;\npub struct Queue(Vec<CallId>);\n"),
        // A part adding methods to its parent's type names it one way: the parent calls them
        // without naming the part.
        file(
            "gate/respond.rs",
            "use super::Gate;\nimpl Gate {\n    pub fn responded(&self) {}\n}\n",
        ),
        // A re-export names the part as a `use` does.
        file(
            "rules/learn.rs",
            "mod memo;\npub use self::memo::Memo;\npub struct Learner;\n",
        ),
        file(
            "rules/learn/memo.rs",
            "use super::Learner;\npub struct Memo;\nimpl Learner {\n    fn memo() -> Memo { Memo }\n}\n",
        ),
    ];
    assert_eq!(
        problems_in(&files),
        [
            "src/core/gate/mod.rs:3 and src/core/gate/queue.rs:1 import each other",
            "src/core/rules/learn.rs:2 and src/core/rules/learn/memo.rs:1 import each other",
        ]
    );
}

#[test]
fn the_reader_finds_the_paths_the_core_writes() {
    let modules: Vec<Vec<String>> = [
        "",
        "gate",
        "gate/queue",
        "gate/call",
        "rules",
        "rules/learn",
    ]
    .iter()
    .map(|m| {
        m.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
    .collect();
    let file = Source {
        name: "gate/mod.rs".into(),
        module: vec!["gate".into()],
        text: r##"
            //! Skipped: [`x`](crate::core::rules::learn), "crate::core::rules".
            use super::rules::{self, learn::{Learner as L, Sample}};
            use queue::*;
            fn f() -> crate::core::Millis { let c = '"'; call::Stage::Done; Vec::<u8>::new(); 0.0 }
            fn g<'a>(r#type: &'a str) -> &'a str { let _ = r#"crate::core::sim"#; r#type }
            /* Skipped: crate::core::sim */
            #[cfg(test)]
            mod tests {
                use super::*;
                use super::super::rules::learn;
            }
        "##
        .into(),
    };
    let found: Vec<(String, usize)> = named(&file, &modules)
        .into_iter()
        .map(|(path, line)| (path.join("::"), line))
        .collect();
    let expect = [
        ("rules", 3),
        ("rules::learn::Learner", 3),
        ("rules::learn::Sample", 3),
        ("gate::queue::*", 4),
        ("Millis", 5),
        ("gate::call::Stage::Done", 5),
        ("gate::*", 10),
        ("rules::learn", 11),
    ];
    let expect: Vec<(String, usize)> = expect.iter().map(|&(p, l)| (p.into(), l)).collect();
    assert_eq!(found, expect);
}
