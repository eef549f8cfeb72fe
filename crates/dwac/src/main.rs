//! `dwac`: the command-line tool (ARCHITECTURE.md "Crates"). Exit codes: 0 success, 1 a check failed,
//! 2 bad input or usage.

mod args;
mod cmd;
mod load;
mod report;
mod watchdog;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use args::{Cli, Cmd};

/// The compiler allocates many small, short-lived values (configurations, class lists, memo
/// keys) and the tokenizer load many small strings: mimalloc takes markedly fewer instructions
/// per allocation than glibc's malloc and does not slow down as the main arena fragments.
/// (The libraries leave the allocator to the program that links them.)
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn run() -> Result<u8> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Compile(a) => cmd::compile::compile(a),
        Cmd::Inspect(a) => cmd::inspect::inspect(a),
        Cmd::Check(a) => cmd::check::check(a),
        Cmd::Bench(a) => cmd::bench::bench(a),
        Cmd::Mask(a) => cmd::mask::mask(a),
    }
}

fn main() -> ExitCode {
    // Like any Unix filter: when the reader of our output goes away (`dwac inspect x | head`),
    // end quietly on SIGPIPE instead of panicking in `println!` on the broken pipe.
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
