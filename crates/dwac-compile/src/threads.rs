//! Context for the threads the compiler starts.
//!
//! A compile runs on the caller's thread and, for the Parser DWA, on helper threads of its own
//! (the vocabulary walk; the saturation beside a long first forward attempt). Whoever embeds the compiler may keep per-compile context in
//! thread-local state (the CLI charges each input's allocations to that input's memory budget);
//! [`set_context_hooks`] lets such a context follow the compile onto its helper threads: it is
//! captured on the thread that starts a helper and entered on the helper before it runs.
//! (The vocabulary's trie, built once per vocabulary for the whole process, is not a compile's
//! own work, and its thread carries no context.)
//!
//! A compile can also be stopped from outside ([`Stop`], [`with_stop`]): a server's time or
//! memory budget, a batch's. The request follows the compile onto its helper threads as the
//! context does, and the long loops look at it (the Parser DWA's build between lexer states and
//! every few hundred expansions within one, the saturation every few thousand transitions), so a
//! stopped compile ends within milliseconds with [`crate::CompileError::Stopped`], having freed
//! what it built.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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

/// `f`, to run on a helper thread with the context (and the [`Stop`]) of the thread calling
/// `carry`.
pub(crate) fn carry<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let ctx = HOOKS.get().map(|h| (h.enter, (h.capture)()));
    let stop = current_stop();
    move || {
        if let Some((enter, c)) = ctx {
            enter(c);
        }
        STOP.with(|s| *s.borrow_mut() = stop);
        f()
    }
}

/// A request to stop a compile, with its reason: made by the embedder, handed to the compile
/// with [`with_stop`], set from any thread with [`Stop::stop`].
#[derive(Debug, Default)]
pub struct Stop {
    set: AtomicBool,
    why: Mutex<Option<String>>,
}

impl Stop {
    /// A request not (yet) made.
    pub fn new() -> Arc<Stop> {
        Arc::new(Stop::default())
    }

    /// Ask the compile to stop, saying why (the first reason given is kept): its error will be
    /// [`crate::CompileError::Stopped`] with that reason.
    pub fn stop(&self, why: impl Into<String>) {
        let mut w = self.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if w.is_none() {
            *w = Some(why.into());
        }
        self.set.store(true, Ordering::Release);
    }

    /// Has [`Stop::stop`] been called?
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// The reason given to [`Stop::stop`], if it was called.
    pub fn reason(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

thread_local! {
    /// The stop request of the compile running on this thread, if its embedder gave one.
    static STOP: RefCell<Option<Arc<Stop>>> = const { RefCell::new(None) };
}

/// Run `f` (a compile) on this thread with `stop` as its stop request: the compile and its
/// helper threads look at it and end with [`crate::CompileError::Stopped`] once it is set.
pub fn with_stop<T>(stop: &Arc<Stop>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<Stop>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            let _ = STOP.try_with(|s| *s.borrow_mut() = previous);
        }
    }
    let previous = STOP.with(|s| s.borrow_mut().replace(Arc::clone(stop)));
    let _restore = Restore(previous);
    f()
}

/// This thread's stop request, if any.
pub(crate) fn current_stop() -> Option<Arc<Stop>> {
    STOP.try_with(|s| s.borrow().clone()).ok().flatten()
}

/// The reason this thread's compile was asked to stop, if it was.
pub(crate) fn stop_requested() -> Option<String> {
    current_stop().filter(|s| s.is_set()).map(|s| s.reason().unwrap_or_else(|| "stopped".into()))
}

/// Has this thread's compile been asked to stop? (Cheap enough for every few hundred steps.)
pub(crate) fn stopping() -> bool {
    STOP.try_with(|s| s.borrow().as_ref().is_some_and(|s| s.is_set())).unwrap_or(false)
}
