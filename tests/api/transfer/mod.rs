//! Moving comments between stores (`export`, `import`), and `import`'s file as hostile input.

mod export_import;
mod import_checks;
