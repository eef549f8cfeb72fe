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
/// (The libraries leave the allocator to the program that links them.) Counted per input for
/// the batch's memory budgets (`dwac_measure::accounts`).
#[global_allocator]
static GLOBAL: dwac_measure::accounts::Counting<mimalloc::MiMalloc> =
    dwac_measure::accounts::Counting(mimalloc::MiMalloc);

/// mimalloc's `mi_option_purge_delay` (its index in `mi_option_e`, the same in mimalloc 2 and 3;
/// `libmimalloc-sys` names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keep memory that is freed for the process's life instead of returning it to the OS a second
/// later (mimalloc 3's default delay). The compiler frees and takes again hundreds of megabytes
/// between lexer states; purged, each page comes back as a zeroed page fault (`tools-500`:
/// 20,000-35,000 minor faults, 1.1-2.5 s of system time, about 10% of the compile; kept: 800
/// faults, peak RSS 2-4% higher). A short-lived batch process loses nothing by keeping it.
fn keep_freed_memory() {
    // SAFETY: sets an integer option of the allocator, first thing in `main` (before any other
    // thread exists); it changes only when freed memory is returned to the OS.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

/// No transparent huge pages for this process: mimalloc advises them on its arenas, and then the
/// first touch of each is a whole 2 MiB page zeroed, though a compile touches its many large,
/// short-lived tables only in part (`tools-500`: some 680 such faults, 1.4 GB zeroed, against
/// 4 KiB faults for what is used). Artifacts are read through a file mapping, which this leaves
/// alone.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl` with constant arguments; it sets one flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn run() -> Result<u8> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Compile(a) => cmd::compile::compile(a),
        Cmd::Inspect(a) => cmd::inspect::inspect(a),
        Cmd::Check(a) => cmd::check::check(a),
        Cmd::Bench(a) => cmd::bench::bench(a),
        Cmd::Mask(a) => cmd::mask::mask(a),
        Cmd::Tools(a) => cmd::tools::tools(a),
    }
}

fn main() -> ExitCode {
    keep_freed_memory();
    no_transparent_huge_pages();
    // (The compiler's helper threads charge the account of the thread that starts them.)
    dwac_compile::threads::set_context_hooks(dwac_compile::threads::ContextHooks {
        capture: dwac_measure::accounts::current,
        enter: dwac_measure::accounts::set_current,
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The option index names the purge delay: its default in mimalloc 3 is 1,000 (ms), and -1
    /// (never purge) is what the CLI sets.
    #[test]
    fn purge_delay_option() {
        // SAFETY: reads and sets an integer option of the allocator.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), 1000);
            keep_freed_memory();
            assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), -1);
        }
    }
}
