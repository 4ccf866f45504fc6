//! The settings table (`docs/operations/settings.md`) and `dynapage serve --help`, both ways:
//! the table lists exactly the flags `serve` has (those its help prints: every argument that
//! is not hidden, `--log-format` included), each with its variable and its default.

use std::collections::BTreeMap;

use clap::{ArgAction, CommandFactory};
use dynapage::cli::Cli;

use super::markdown::Document;

/// A row of the table: variable and default, as written (code spans keep their backticks).
struct Row {
    variable: String,
    default: String,
}

/// The cells of a table row, split on `|` outside code spans.
fn cells(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let (mut cell, mut code) = (String::new(), false);
    for c in line.trim().trim_matches('|').chars() {
        match c {
            '`' => {
                code = !code;
                cell.push(c);
            }
            '|' if !code => cells.push(std::mem::take(&mut cell).trim().to_owned()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_owned());
    cells
}

/// The rows between `<!-- settings -->` and `<!-- /settings -->`, by flag.
fn table() -> BTreeMap<String, Row> {
    let document = Document::read("docs/operations/settings.md");
    let start = document
        .text
        .find("<!-- settings -->")
        .expect("a `<!-- settings -->` table");
    let end = document.text[start..]
        .find("<!-- /settings -->")
        .expect("its end")
        + start;
    let mut rows = BTreeMap::new();
    for line in document.text[start..end].lines() {
        let cells = cells(line);
        let Some(flag) = cells[0]
            .strip_prefix("`--")
            .and_then(|f| f.strip_suffix('`'))
        else {
            continue;
        };
        assert_eq!(cells.len(), 4, "a row of four cells: {line}");
        let row = Row {
            variable: cells[1].trim_matches('`').to_owned(),
            default: cells[2].clone(),
        };
        assert!(
            rows.insert(flag.to_owned(), row).is_none(),
            "--{flag} has two rows"
        );
    }
    rows
}

#[test]
fn the_settings_table_is_every_flag_of_serve_with_its_variable_and_default() {
    let mut cli = Cli::command();
    cli.build();
    let serve = cli.find_subcommand("serve").expect("a serve command");
    let mut rows = table();
    let mut problems = Vec::new();
    for arg in serve.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if arg.is_hide_set() || long == "help" {
            continue;
        }
        let Some(row) = rows.remove(long) else {
            problems.push(format!(
                "--{long}: `serve --help` lists it, the table does not"
            ));
            continue;
        };
        let variable = arg.get_env().map(|v| v.to_string_lossy().into_owned());
        if variable.as_deref() != Some(row.variable.as_str()) {
            problems.push(format!(
                "--{long}: the table says {}, the flag reads {variable:?}",
                row.variable
            ));
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let expected = match arg.get_action() {
            ArgAction::SetTrue => Some("off".to_owned()),
            _ if defaults.is_empty() => None,
            _ => Some(format!("`{}`", defaults.join(","))),
        };
        match expected {
            Some(expected) if row.default != expected => problems.push(format!(
                "--{long}: the table's default is {}, the flag's {expected}",
                row.default
            )),
            // No default in the code: the table says in words what happens (`unset`, `none`,
            // the AWS chain…), never a value the flag would not take by itself.
            None if row.default.starts_with('`')
                && row.default.ends_with('`')
                && row.default.matches('`').count() == 2 =>
            {
                problems.push(format!(
                    "--{long}: the table gives the default {}, the flag has none",
                    row.default
                ))
            }
            _ => {}
        }
    }
    problems.extend(
        rows.keys()
            .map(|flag| format!("--{flag}: in the table, not a flag of `serve`")),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn table_cells_split_outside_code_spans() {
    assert_eq!(
        cells("| `--a` | `A` | `x|y` | b |"),
        ["`--a`", "`A`", "`x|y`", "b"]
    );
}

/// `dynapage serve --help` as it prints: each flag with the variable and the default it shows.
fn help_flags() -> Vec<(String, Option<String>, Option<String>)> {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_dynapage"))
        .args(["serve", "--help"])
        .output()
        .expect("dynapage serve --help runs");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let mut flags: Vec<(String, Option<String>, Option<String>)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let flag = trimmed
            .strip_prefix("--")
            .or_else(|| trimmed.split_once(", --").map(|(_, flag)| flag))
            .filter(|_| line.starts_with("  "));
        if let Some(flag) = flag {
            let name = flag.split_whitespace().next().unwrap_or("").to_owned();
            flags.push((name, None, None));
        } else if let Some((_, variable, default)) = flags.last_mut() {
            if let Some(env) = trimmed.strip_prefix("[env: ") {
                let env = env.trim_end_matches(']');
                *variable = Some(env.split('=').next().unwrap_or(env).to_owned());
            } else if let Some(value) = trimmed.strip_prefix("[default: ") {
                // clap quotes a default that holds a space (`[default: "The shop"]`).
                let value = value.trim_end_matches(']');
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value);
                *default = Some(value.to_owned());
            }
        }
    }
    flags.retain(|(name, _, _)| name != "help");
    flags
}

#[test]
fn the_settings_table_lists_what_serve_help_prints() {
    let table = table();
    let printed = help_flags();
    assert!(printed.len() > 50, "{printed:?}");
    let mut problems = Vec::new();
    for (flag, variable, default) in &printed {
        let Some(row) = table.get(flag) else {
            problems.push(format!(
                "--{flag}: printed by `serve --help`, not in the table"
            ));
            continue;
        };
        if variable.as_deref() != Some(row.variable.as_str()) {
            problems.push(format!(
                "--{flag}: help prints {variable:?}, the table {}",
                row.variable
            ));
        }
        if let Some(default) = default {
            if row.default != format!("`{default}`") {
                problems.push(format!(
                    "--{flag}: help prints the default {default}, the table {}",
                    row.default
                ));
            }
        }
    }
    let printed: Vec<&String> = printed.iter().map(|(flag, _, _)| flag).collect();
    problems.extend(
        table
            .keys()
            .filter(|flag| !printed.contains(flag))
            .map(|flag| format!("--{flag}: in the table, not printed by `serve --help`")),
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
