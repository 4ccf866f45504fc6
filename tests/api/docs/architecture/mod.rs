//! The layout `docs/architecture.md` draws, held to `src/`: no file over 450 lines, no function
//! over 80, no circle of imports among the files, and no module importing one above it in the
//! layer order of the chapter's modules table (its rows run from the bottom layer up; the
//! modules named in one row share a layer). An import is any path a file names that resolves
//! to another file of the crate: `use` trees, and paths in code from `crate`, `super`, `self`
//! or a child module; `src/lib.rs` (which declares the modules) and `src/main.rs` (the
//! binary) stand outside the layers, and so do tests (`#[cfg(test)]` modules, inline or in
//! files), which may use what the code they test may not.

mod rust_text;
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::markdown::Document;

const MAX_FILE_LINES: usize = 450;
const MAX_FUNCTION_LINES: usize = 80;
const ROOT: &str = "src/lib.rs";

/// The crate's files by path from the repository's root (`src/a/b.rs`), with their text.
type Files = BTreeMap<String, String>;
/// Which files each file imports.
type Imports = BTreeMap<String, BTreeSet<String>>;

fn source_files() -> Files {
    fn walk(dir: &Path, rel: &str, files: &mut Files) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("a UTF-8 name");
            let rel = format!("{rel}/{name}");
            if path.is_dir() {
                walk(&path, &rel, files);
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("a readable source file");
                files.insert(rel, text);
            }
        }
    }
    let mut files = Files::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "src",
        &mut files,
    );
    files
}

/// The module a file holds: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`, `src/lib.rs` the root.
fn module_of(file: &str) -> Vec<String> {
    let inner = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut path: Vec<String> = inner.split('/').map(str::to_owned).collect();
    if path.last().is_some_and(|last| last == "mod") || path == ["lib"] {
        path.pop();
    }
    path
}

/// The file that holds module `path`, if one does.
fn file_of(files: &Files, path: &[String]) -> Option<String> {
    if path.is_empty() {
        return Some(ROOT.to_owned());
    }
    let joined = path.join("/");
    [format!("src/{joined}.rs"), format!("src/{joined}/mod.rs")]
        .into_iter()
        .find(|candidate| files.contains_key(candidate))
}

/// What a file's `use` items bring into its scope: names to the paths they stand for (from the
/// crate's root), and the modules it glob-imports.
#[derive(Default)]
struct Scope {
    names: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
}

/// The crate: its files, each blanked, and what each file's `use` items bring into scope.
struct Crate {
    files: Files,
    blanked: Files,
    scopes: BTreeMap<String, Scope>,
}

impl Crate {
    fn new(files: Files) -> Self {
        let blanked: Files = files
            .iter()
            .map(|(f, text)| (f.clone(), rust_text::blank(text)))
            .collect();
        let mut scopes = BTreeMap::new();
        for (file, text) in &blanked {
            let module = module_of(file);
            let inline = rust_text::inline_modules(text);
            let mut scope = Scope::default();
            for named in rust_text::uses(text) {
                if inline
                    .iter()
                    .any(|m| m.open < named.at && named.at < m.close)
                {
                    continue; // a test module's imports are not the file's scope
                }
                let Some(full) = absolute(&files, &module, &named.path) else {
                    continue;
                };
                match named.name.as_deref() {
                    Some("*") => scope.globs.push(full),
                    Some(name) => {
                        scope.names.insert(name.to_owned(), full);
                    }
                    None => {}
                }
            }
            scopes.insert(file.clone(), scope);
        }
        Self {
            files,
            blanked,
            scopes,
        }
    }

    /// Whether a file is a module compiled for tests only (`#[cfg(test)] mod tests;`).
    fn for_tests_only(&self, file: &str) -> bool {
        let module = module_of(file);
        let Some((name, parent)) = module.split_last() else {
            return false;
        };
        let Some(parent) = file_of(&self.files, parent) else {
            return false;
        };
        let text = &self.blanked[&parent];
        rust_text::words(text, "mod").any(|at| {
            text[at + 3..]
                .trim_start()
                .strip_prefix(name.as_str())
                .is_some_and(|rest| rest.trim_start().starts_with(';'))
                && rust_text::for_tests_only(text, at)
        })
    }

    /// The file that defines what a whole path names: the deepest module of it that is a file,
    /// then through that file's imports (a re-export or a name a child takes from `super`) to
    /// the file the item is written in.
    fn resolve(&self, path: &[String], depth: usize) -> String {
        let mut file = ROOT.to_owned();
        let mut used = 0;
        for len in 1..=path.len() {
            match file_of(&self.files, &path[..len]) {
                Some(found) => (file, used) = (found, len),
                None => break,
            }
        }
        let Some(name) = path.get(used).filter(|_| depth < 8) else {
            return file;
        };
        let scope = &self.scopes[&file];
        if let Some(target) = scope.names.get(name) {
            let mut next = target.clone();
            next.extend_from_slice(&path[used + 1..]);
            return self.resolve(&next, depth + 1);
        }
        if !rust_text::defines(&self.blanked[&file], name) {
            for glob in &scope.globs {
                let mut next = glob.clone();
                next.extend_from_slice(&path[used..]);
                let behind = self.resolve(&next, depth + 1);
                if behind != file && rust_text::defines(&self.blanked[&behind], name) {
                    return behind;
                }
            }
        }
        file
    }
}

/// The import graph of the crate's files (the root and the binary's `main.rs` left out).
/// A module's file and the files of its submodules are one room: a child implements what its
/// parent declares and the parent calls what it re-exports, so an import between a file and
/// one of its own ancestors is no arrow here; an import between siblings or cousins is.
fn imports(files: &Files) -> Imports {
    let krate = Crate::new(files.clone());
    let mut graph = Imports::new();
    for (file, text) in &krate.blanked {
        if file == ROOT || file == "src/main.rs" || krate.for_tests_only(file) {
            continue;
        }
        let inline = rust_text::inline_modules(text);
        let module = module_of(file);
        let named = rust_text::uses(text)
            .into_iter()
            .chain(rust_text::paths_in_code(text, |_| true));
        let targets = graph.entry(file.clone()).or_default();
        for rust_text::Named { at, path, .. } in named {
            if inline.iter().any(|m| m.test && m.open < at && at < m.close) {
                continue; // the file's tests may use what the file may not
            }
            let mut here = module.clone();
            here.extend(
                inline
                    .iter()
                    .filter(|m| m.open < at && at < m.close)
                    .map(|m| m.name.clone()),
            );
            let Some(full) = absolute(files, &here, &path) else {
                continue;
            };
            let target = krate.resolve(&full, 0);
            let (from, to) = (module_of(file), module_of(&target));
            if !from.starts_with(&to) && !to.starts_with(&from) {
                targets.insert(target);
            }
        }
    }
    graph
}

/// `path` as named from module `here`, from the crate's root; `None` for a path outside the
/// crate (another crate, a local item, a type's associated item).
fn absolute(files: &Files, here: &[String], path: &[String]) -> Option<Vec<String>> {
    let (mut base, rest) = match path[0].as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (here.to_vec(), &path[1..]),
        "super" => {
            let ups = path
                .iter()
                .take_while(|segment| *segment == "super")
                .count();
            (here[..here.len().checked_sub(ups)?].to_vec(), &path[ups..])
        }
        child => {
            let mut module = here.to_vec();
            module.push(child.to_owned());
            file_of(files, &module)?;
            (here.to_vec(), path)
        }
    };
    base.extend_from_slice(rest);
    Some(base)
}

/// The strongly connected groups of more than one file (Tarjan's algorithm).
fn circles(graph: &Imports) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Imports,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    group.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

/// The layer of each top-level module, from the modules table of `docs/architecture.md`.
fn layers() -> BTreeMap<String, usize> {
    let chapter = Document::read("docs/architecture.md");
    let table = chapter
        .text
        .split("## The modules")
        .nth(1)
        .expect("docs/architecture.md has a section `## The modules`");
    let rows = table
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'));
    let mut layers = BTreeMap::new();
    for (layer, row) in rows.skip(2).enumerate() {
        let first = row
            .trim_start_matches('|')
            .split('|')
            .next()
            .unwrap_or_default();
        for name in first.split('`').skip(1).step_by(2) {
            let previous = layers.insert(name.to_owned(), layer);
            assert!(
                previous.is_none(),
                "docs/architecture.md names `{name}` in two rows"
            );
        }
    }
    layers
}

/// The top-level modules `src/lib.rs` declares.
fn declared_modules(files: &Files) -> BTreeSet<String> {
    rust_text::blank(&files[ROOT])
        .lines()
        .filter_map(|line| {
            let line = line
                .trim()
                .trim_start_matches("pub ")
                .trim_start_matches("pub(crate) ");
            line.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn no_file_under_src_is_over_450_lines() {
    let long: Vec<String> = source_files()
        .iter()
        .map(|(file, text)| (file, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_FILE_LINES)
        .map(|(file, lines)| format!("{file}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines (split them along a seam):\n{}",
        long.join("\n")
    );
}

#[test]
fn no_function_under_src_is_over_80_lines() {
    let mut long = Vec::new();
    for (file, text) in source_files() {
        for function in rust_text::functions(&rust_text::blank(&text)) {
            if function.lines() > MAX_FUNCTION_LINES {
                long.push(format!(
                    "{file}:{} fn {}: {} lines",
                    function.first,
                    function.name,
                    function.lines()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_circle_of_imports_among_the_files_of_src() {
    let files = source_files();
    let graph = imports(&files);
    assert!(
        graph.values().map(BTreeSet::len).sum::<usize>() > graph.len(),
        "the import graph was read"
    );
    let circles: Vec<String> = circles(&graph)
        .iter()
        .map(|group| {
            let ties = group.iter().flat_map(|from| {
                graph[from]
                    .iter()
                    .filter(|to| group.contains(to))
                    .map(move |to| format!("  {from} -> {to}"))
            });
            format!(
                "{}:\n{}",
                group.join(", "),
                ties.collect::<Vec<_>>().join("\n")
            )
        })
        .collect();
    assert!(
        circles.is_empty(),
        "files that import each other, directly or around a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_modules_table_names_every_module_of_the_library_once() {
    let files = source_files();
    let declared = declared_modules(&files);
    let drawn: BTreeSet<String> = layers().into_keys().collect();
    assert_eq!(
        drawn, declared,
        "docs/architecture.md's modules table and src/lib.rs's modules"
    );
}

#[test]
fn no_module_imports_one_above_it_in_the_layer_order() {
    let files = source_files();
    let layers = layers();
    let top = |file: &str| module_of(file).first().cloned().unwrap_or_default();
    let mut upward = Vec::new();
    for (file, targets) in imports(&files) {
        let from = top(&file);
        for target in targets {
            let to = top(&target);
            if from != to && layers.get(&to) > layers.get(&from) {
                upward.push(format!(
                    "{file} ({from}) imports {target} ({to}, a layer above)"
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that point up the layers of docs/architecture.md:\n{}",
        upward.join("\n")
    );
}
