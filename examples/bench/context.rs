//! Where things are: the repository, Cargo's target directory, the raw-output and results
//! directories, and the dynapage binary a benchmark runs (which build, and building it first).
//! It knows nothing of any benchmark.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use clap::{Args, ValueEnum};

/// Options every benchmark takes.
#[derive(Args, Debug)]
#[command(next_help_heading = "Options of every benchmark")]
pub struct GlobalArgs {
    /// Where the results go (CSV files and text summaries)
    #[arg(long, global = true, value_name = "DIR")]
    results: Option<PathBuf>,
    /// Where raw output goes: wrk and server logs, request bodies [default: <target>/bench-raw]
    #[arg(long, global = true, value_name = "DIR")]
    raw_dir: Option<PathBuf>,
    /// Which build of dynapage to run (`debug` reproduces the consumer tables, measured on one)
    #[arg(long, global = true, value_enum, default_value_t = Build::Release)]
    build: Build,
    /// Run the dynapage binary as it is, without `cargo build` first
    #[arg(long, global = true)]
    no_build: bool,
}

/// A Cargo profile of the dynapage binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Build {
    Release,
    Debug,
}

/// Paths and the binary, shared by every benchmark.
#[derive(Debug)]
pub struct Context {
    pub repo: PathBuf,
    target: PathBuf,
    raw: PathBuf,
    results: PathBuf,
    pub build: Build,
    no_build: bool,
}

impl Context {
    pub fn new(args: &GlobalArgs) -> anyhow::Result<Self> {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        // Cargo's target directory: CARGO_TARGET_DIR if set (relative to the repository).
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| repo.join("target"), |dir| repo.join(dir));
        let raw = args
            .raw_dir
            .clone()
            .unwrap_or_else(|| target.join("bench-raw"));
        let results = args
            .results
            .clone()
            .unwrap_or_else(|| repo.join("bench/results"));
        for dir in [&raw, &results] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(Self {
            repo,
            target,
            raw,
            results,
            build: args.build,
            no_build: args.no_build,
        })
    }

    /// A file of raw output (not committed).
    pub fn raw(&self, name: &str) -> PathBuf {
        self.raw.join(name)
    }

    /// A file of results.
    pub fn result(&self, name: &str) -> PathBuf {
        self.results.join(name)
    }

    pub fn results_dir(&self) -> &Path {
        &self.results
    }

    /// Cargo's target directory.
    pub fn target_dir(&self) -> &Path {
        &self.target
    }

    /// The dynapage binary of the chosen build.
    pub fn dynapage(&self) -> PathBuf {
        let profile = match self.build {
            Build::Release => "release",
            Build::Debug => "debug",
        };
        self.target.join(profile).join("dynapage")
    }

    /// Builds the dynapage binary (a no-op when it is fresh), unless told not to. The release
    /// profile's settings can be overridden from the environment as Cargo allows, e.g.
    /// `CARGO_PROFILE_RELEASE_LTO=false` for a build minutes shorter than fat LTO (and somewhat
    /// slower code: the results' header says which was used).
    pub fn build_dynapage(&self) -> anyhow::Result<()> {
        if self.no_build {
            if !self.dynapage().is_file() {
                bail!(
                    "--no-build, but {} does not exist",
                    self.dynapage().display()
                );
            }
            return Ok(());
        }
        crate::report::log(&format!("cargo build ({})", self.build_description()));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        // With this tool in the same build, as the scripts before it built the server with
        // their load generator: one feature resolution (dev-dependencies included), so the
        // server is the same binary whichever benchmark builds it, and a debug build reuses
        // what `cargo test` compiled.
        command.current_dir(&self.repo).args(["build", "--quiet"]);
        command.args(["--bin", "dynapage", "--example", "bench"]);
        if self.build == Build::Release {
            command.arg("--release");
        }
        let status = command.status().context("running cargo build")?;
        if !status.success() {
            bail!("cargo build of dynapage failed ({status})");
        }
        Ok(())
    }

    /// The build of the server, as the results' headers name it.
    pub fn build_description(&self) -> String {
        match self.build {
            Build::Debug => "debug build".to_owned(),
            Build::Release => profile_description("release"),
        }
    }
}

/// "<profile> build: lto=… codegen-units=…": Cargo.toml's release settings (fat, 1), which the
/// bench profile inherits, or what the environment overrides them with.
pub fn profile_description(profile: &str) -> String {
    let setting = |name: &str, default: &str| {
        let variable = |p: &str| format!("CARGO_PROFILE_{}_{name}", p.to_uppercase());
        std::env::var(variable(profile))
            .or_else(|_| std::env::var(variable("release")))
            .unwrap_or_else(|_| default.to_owned())
    };
    format!(
        "{profile} build: lto={} codegen-units={}",
        setting("LTO", "fat"),
        setting("CODEGEN_UNITS", "1")
    )
}
