//! Memory accounts: a counting global allocator charges every allocation to the account of the
//! thread that makes it, so one process can tell apart what each of several compiles holds. The
//! CLI stops the one input of a batch (`dwac compile a.lark b.lark … --jobs N`) that grows past
//! `--max-memory-mb` and goes on with the others; the Python module stops a request's compile
//! past its `max_memory_mb`, whatever else the server is compiling. The process's resident size
//! cannot tell compiles apart: it holds all of theirs, and memory an earlier one freed may stay
//! mapped.
//!
//! An account is a slot of a fixed table of counters. A thread enters one ([`Account::enter`])
//! and every allocation it makes adds its size, every deallocation subtracts it, until it leaves;
//! the compiler's helper threads enter the account of the thread that started them (install
//! [`current`] and [`set_current`] as `dwac_compile::threads`' context hooks). What an account
//! reads is the compile's *live* allocation: bytes it allocated minus bytes its threads freed.
//! Memory that crosses compiles (an entry of a process-wide cache, made by one and evicted
//! during another) is charged to the one that made it and credited to the one that frees it;
//! those caches are bounded (tens of megabytes), far below a budget.
//!
//! Only a binary that installs [`Counting`] as its `#[global_allocator]` counts anything; in
//! any other, accounts stay at zero.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Accounts that can be open at once (slot 0 is "no account").
const SLOTS: usize = 256;

static LIVE: [AtomicI64; SLOTS] = [const { AtomicI64::new(0) }; SLOTS];
static OPEN: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];

thread_local! {
    /// The current thread's account (0: none). A `const` cell without a destructor: readable
    /// from the allocator at any point of a thread's life, its teardown included.
    static SLOT: Cell<usize> = const { Cell::new(0) };
}

/// Charge `bytes` (negative: a release) to the current thread's account, if it has one.
#[inline]
fn charge(bytes: i64) {
    let slot = SLOT.try_with(Cell::get).unwrap_or(0);
    if slot != 0 {
        LIVE[slot].fetch_add(bytes, Ordering::Relaxed);
    }
}

/// A global allocator that counts, per account, what it hands out (wraps `A`).
pub struct Counting<A>(pub A);

// SAFETY: every call is forwarded to `A` unchanged; the counting only reads a thread-local cell
// and adds to an atomic, neither of which allocates or unwinds.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            charge(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            charge(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) };
        charge(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            charge(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// One input's account; its slot is free again when it is dropped.
pub struct Account {
    slot: usize,
}

impl Account {
    /// A fresh account at zero, or `None` if every slot is taken (the input then has no budget
    /// of its own; the batch's ceiling on the process still holds).
    pub fn open() -> Option<Account> {
        (1..SLOTS).find_map(|slot| {
            OPEN[slot].compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).ok()?;
            LIVE[slot].store(0, Ordering::Relaxed);
            Some(Account { slot })
        })
    }

    /// Charge this thread's allocations to the account until the guard is dropped.
    pub fn enter(&self) -> Entered {
        let previous = SLOT.with(|c| c.replace(self.slot));
        Entered { previous }
    }

    /// Bytes allocated and not yet freed on the account's threads.
    pub fn live_bytes(&self) -> i64 {
        LIVE[self.slot].load(Ordering::Relaxed)
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        OPEN[self.slot].store(false, Ordering::Release);
    }
}

/// This thread's account while alive; the previous one after.
pub struct Entered {
    previous: usize,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.previous;
        SLOT.with(|c| c.set(previous));
    }
}

/// The current thread's account slot (0: none): the `capture` hook of
/// `dwac_compile::threads::ContextHooks`.
pub fn current() -> usize {
    SLOT.with(Cell::get)
}

/// Make `slot` the current thread's account: the `enter` hook of
/// `dwac_compile::threads::ContextHooks`.
pub fn set_current(slot: usize) {
    SLOT.with(|c| c.set(slot));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accounts' slots are process-wide: the tests take turns (one's `open` would take the
    /// slot the other just freed).
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// (The test binary's allocator is the system's; charging is tested directly.)
    #[test]
    fn an_account_counts_its_threads_live_bytes() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let a = Account::open().expect("a free slot");
        let b = Account::open().expect("another");
        assert_ne!(a.slot, b.slot);
        {
            let _in = a.enter();
            charge(1000);
            charge(-400);
            {
                let _nested = b.enter();
                charge(7);
            }
            charge(1);
        }
        charge(5_000); // outside: nobody's
        assert_eq!((a.live_bytes(), b.live_bytes()), (601, 7));
        let slot = a.slot;
        drop(a);
        let c = Account::open().expect("a slot");
        assert_eq!(c.slot, slot, "a dropped account's slot is reused");
        assert_eq!(c.live_bytes(), 0, "at zero");
    }

    #[test]
    fn counting_allocator_charges_the_entered_account() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let counting = Counting(std::alloc::System);
        let a = Account::open().expect("a free slot");
        let layout = Layout::from_size_align(4096, 8).expect("layout");
        let _in = a.enter();
        // SAFETY: a valid layout; the block is freed with the same layout below.
        unsafe {
            let p = counting.alloc(layout);
            assert!(!p.is_null());
            assert_eq!(a.live_bytes(), 4096);
            let q = counting.realloc(p, layout, 10_000);
            assert!(!q.is_null());
            assert_eq!(a.live_bytes(), 10_000);
            counting.dealloc(q, Layout::from_size_align(10_000, 8).expect("layout"));
        }
        assert_eq!(a.live_bytes(), 0);
    }
}
