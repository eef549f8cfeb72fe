//! Context for the threads the compiler starts.
//!
//! A compile runs on the caller's thread and, for the Parser DWA, on helper threads of its own
//! (the vocabulary walk; the saturation beside a long first forward attempt). Whoever embeds the compiler may keep per-compile context in
//! thread-local state (the CLI charges each input's allocations to that input's memory budget);
//! [`set_context_hooks`] lets such a context follow the compile onto its helper threads: it is
//! captured on the thread that starts a helper and entered on the helper before it runs.
//! (The vocabulary's trie, built once per vocabulary for the whole process, is not a compile's
//! own work, and its thread carries no context.)

use std::sync::OnceLock;

/// How a context moves from a thread to the helper threads it starts.
#[derive(Clone, Copy, Debug)]
pub struct ContextHooks {
    /// Read the current thread's context (called on the starting thread).
    pub capture: fn() -> usize,
    /// Make `context` the current thread's (called on the helper, before its work).
    pub enter: fn(usize),
}

static HOOKS: OnceLock<ContextHooks> = OnceLock::new();

/// Install the process's context hooks (once; later calls are refused and return `false`).
pub fn set_context_hooks(hooks: ContextHooks) -> bool {
    HOOKS.set(hooks).is_ok()
}

/// `f`, to run on a helper thread with the context of the thread calling `carry`.
pub(crate) fn carry<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let ctx = HOOKS.get().map(|h| (h.enter, (h.capture)()));
    move || {
        if let Some((enter, c)) = ctx {
            enter(c);
        }
        f()
    }
}
