//! No Docker engine runs in CI, so `docker-compose.yml` and the `Dockerfile` are checked against
//! the binary instead: every command and flag they pass must parse with the real command line,
//! every `DYNAPAGE_*` variable must be one the binary reads, and the healthchecks must name
//! routes the server has.

use std::collections::BTreeSet;

use clap::Parser;
use dynapage::cli::{Cli, Command};

use crate::helpers::repo::{known_env_vars, repo_file};
use serde_yaml_ng::Value;

fn compose() -> Value {
    serde_yaml_ng::from_str(&repo_file("docker-compose.yml"))
        .expect("docker-compose.yml is valid YAML")
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .map(|s| {
            s.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn compose_services_built_from_the_dockerfile_run_commands_the_binary_accepts() {
    let compose = compose();
    let services = compose["services"].as_mapping().expect("services");
    let mut checked = 0;
    for (name, service) in services {
        if service.get("build").is_none() {
            continue;
        }
        let command = strings(&service["command"]);
        assert!(!command.is_empty(), "service {name:?} gives no command");
        let argv = std::iter::once("dynapage".to_owned()).chain(command.iter().cloned());
        let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("service {name:?}: {e}"));
        assert!(cli.command.is_some(), "service {name:?} names a subcommand");
        if let Some(Command::Serve(args)) = &cli.command {
            // A server on DynamoDB creates its table; the one box keeps its data in a volume.
            match &args.backend.data_dir {
                None => assert!(
                    args.backend.create_tables,
                    "the server creates its table in compose"
                ),
                Some(dir) => {
                    let volumes = strings(&service["volumes"]);
                    assert!(
                        volumes
                            .iter()
                            .any(|v| v.ends_with(&format!(":{}", dir.display()))),
                        "service {name:?}: --data-dir {} is a volume",
                        dir.display()
                    );
                }
            }
            assert_eq!(
                args.server.listen.ip().to_string(),
                "0.0.0.0",
                "reachable from outside the container"
            );
        }
        if let Some(env) = service.get("environment").and_then(Value::as_mapping) {
            let known = known_env_vars();
            for key in env
                .keys()
                .filter_map(Value::as_str)
                .filter(|k| k.starts_with("DYNAPAGE_"))
            {
                assert!(
                    known.contains(key),
                    "service {name:?} sets {key}, which no flag reads"
                );
            }
        }
        checked += 1;
    }
    assert!(
        checked >= 2,
        "the server and the seeder are built from the Dockerfile"
    );
}

#[test]
fn compose_healthchecks_and_dependencies_point_at_what_exists() {
    let compose = compose();
    let services = &compose["services"];
    let health = strings(&services["dynapage"]["healthcheck"]["test"]).join(" ");
    assert!(
        health.contains("/readyz"),
        "the server's healthcheck uses /readyz: {health}"
    );
    for dependency in ["dynamodb", "redis"] {
        assert!(
            services.get(dependency).is_some(),
            "service {dependency} exists"
        );
        assert_eq!(
            services["dynapage"]["depends_on"][dependency]["condition"].as_str(),
            Some("service_healthy")
        );
        assert!(
            services[dependency].get("healthcheck").is_some(),
            "{dependency} has a healthcheck"
        );
    }
    let ddb = strings(&services["dynamodb"]["command"]);
    for flag in ["-inMemory", "-sharedDb", "-disableTelemetry"] {
        assert!(
            ddb.iter().any(|a| a == flag),
            "DynamoDB Local runs with {flag}"
        );
    }
    let serve = strings(&services["dynapage"]["command"]).join(" ");
    assert!(
        serve.contains("http://dynamodb:8000") && serve.contains("redis://redis:6379"),
        "the server reaches the services by name"
    );
}

#[test]
fn the_dockerfile_builds_the_binary_and_its_default_command_parses() {
    let dockerfile = repo_file("Dockerfile");
    assert!(dockerfile.contains("cargo build --release --locked --bin dynapage"));
    assert!(dockerfile.contains("ENTRYPOINT [\"dynapage\"]"));
    let cmd = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("CMD "))
        .expect("a CMD line");
    let args: Vec<String> = serde_json::from_str(cmd).expect("CMD in exec form");
    let cli = Cli::try_parse_from(std::iter::once("dynapage".to_owned()).chain(args))
        .expect("CMD parses");
    assert!(matches!(cli.command, Some(Command::Serve(_))));
    // Everything the build needs is copied in: include_str!/include_bytes! paths and Cargo.toml.
    let copied: BTreeSet<&str> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("COPY "))
        .filter(|l| !l.starts_with("--from"))
        .flat_map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            parts[..parts.len().saturating_sub(1)].to_vec()
        })
        .collect();
    // Cargo refuses a manifest whose declared targets are missing, so every target directory
    // Cargo.toml declares must be in the build context too.
    let manifest = repo_file("Cargo.toml");
    let mut needed = vec![
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "playground",
        "schema.graphql",
    ];
    for (section, dir) in [
        ("[[bench]]", "benches"),
        ("[[example]]", "examples"),
        ("[[test]]", "tests"),
    ] {
        if manifest.contains(section) {
            needed.push(dir);
        }
    }
    for needed in needed {
        assert!(
            copied.contains(needed),
            "the Dockerfile copies {needed}: {copied:?}"
        );
    }
}
