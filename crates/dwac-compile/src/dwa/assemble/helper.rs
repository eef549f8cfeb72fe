//! Work on a thread of its own beside the driving thread (`later.rs`'s saturations,
//! `apart.rs`'s build), stopped through its [`Race`] if the compile stops first.

use std::sync::Arc;
use std::thread::JoinHandle;

use crate::dwa::race::Race;

/// Work running on a thread of its own beside the driving thread, with the [`Race`] it is
/// stopped through; dropped unfinished (the compile stopped), it is told it lost (`lose`) and
/// joined.
pub(super) struct Helper<T> {
    handle: Option<JoinHandle<Option<T>>>,
    race: Arc<Race>,
    lose: fn(&Race),
}

impl<T> Helper<T> {
    /// Work started on `handle`, stopped through `race` by `lose`.
    pub(super) fn new(handle: JoinHandle<Option<T>>, race: Arc<Race>, lose: fn(&Race)) -> Helper<T> {
        Helper { handle: Some(handle), race, lose }
    }

    /// Its result, once it is done.
    pub(super) fn join(mut self) -> Option<T> {
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => None,
        }
    }
}

impl<T> Drop for Helper<T> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            (self.lose)(&self.race);
            let _ = h.join();
        }
    }
}
