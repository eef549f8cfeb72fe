//! The C ABI of dwac's runtime (header `include/dwac.h`, generated from this file by cbindgen).
//!
//! Handles are opaque: [`DwacArtifact`] (an opened, validated artifact; share it among threads),
//! [`DwacMatcher`] (one sequence's parse state; one thread at a time for the calls that change
//! it, any number for [`dwac_matcher_fill_mask`]) and [`DwacError`] (a code and a one-line
//! message). Every entry point returns a [`DwacStatus`] (or a plain value where nothing can
//! fail), never unwinds into C (a panic becomes [`DwacStatus::Panic`]), treats a null handle
//! as an error (or as "nothing to do" for the `free` functions), and ignores a second `free` of
//! the same handle: live handles are registered, and `free` releases only a registered one.
//!
//! Errors: where a function takes `DwacError **err`, a failure stores a new error there (if
//! `err` is not null; free it with [`dwac_error_free`]) and success stores null.

#![deny(missing_docs)]

use std::any::TypeId;
use std::collections::HashSet;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex, OnceLock};

use dwac_runtime::{Artifact, CommitError, MaskError, Matcher};

/// The outcome of a call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DwacStatus {
    /// Success.
    Ok = 0,
    /// A required pointer argument was null, or a buffer misaligned.
    InvalidArgument = 1,
    /// The artifact could not be opened: missing, truncated, corrupt, or of another format
    /// version (the message says which).
    Artifact = 2,
    /// The grammar refused the token or bytes; the matcher is unchanged.
    Rejected = 3,
    /// The output buffer is smaller than the vocabulary needs.
    BufferTooSmall = 4,
    /// A rollback asked for more steps than the matcher can undo.
    RollbackTooFar = 5,
    /// The matcher already committed an end token.
    Terminated = 6,
    /// The token id is not in the vocabulary.
    TokenOutOfRange = 7,
    /// A special token the grammar does not allow.
    SpecialToken = 8,
    /// An internal error (a caught panic): a bug in dwac; please report it.
    Panic = 9,
}

/// An opened artifact (see the crate docs).
pub struct DwacArtifact {
    inner: Artifact,
}

/// One sequence's parse state (see the crate docs).
pub struct DwacMatcher {
    inner: Matcher,
    /// What its mask fills did (see [`dwac_matcher_last_mask_counters`]); behind a lock
    /// because fills may run on several threads at once.
    counters: Mutex<DwacMaskCounters>,
}

impl DwacMatcher {
    fn new(inner: Matcher) -> DwacMatcher {
        DwacMatcher { inner, counters: Mutex::new(DwacMaskCounters::default()) }
    }
}

/// What a matcher's mask fills did: whether the masks stay on the fast path (read from the
/// Parser DWA alone) or were decided, in part or in full, by committing tokens at run time.
/// Read with [`dwac_matcher_last_mask_counters`]. The first three fields are the last
/// successful [`dwac_matcher_fill_mask`]'s, the others count every successful fill since the
/// matcher was made (a clone starts from zero; `reset` and `rollback` keep them). All zero
/// before the first fill.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DwacMaskCounters {
    /// Tokens the last fill decided by committing them on a copy of the matcher: tokens the
    /// compiler left UNDECIDED (over its budget) at a lexer state the matcher was in.
    pub undecided: u32,
    /// 1 if the last fill computed the whole mask by the reference path (commit every token
    /// on a copy) because the Parser DWA did not cover the matcher's state or the artifact
    /// has none; else 0.
    pub fallbacks: u32,
    /// (stack node, DWA state) pairs the last fill read: the work of its fast path.
    pub reads: u32,
    /// Successful fills.
    pub masks: u64,
    /// `undecided` summed over those fills.
    pub undecided_total: u64,
    /// `fallbacks` summed over those fills: how many masks were computed by the reference
    /// path.
    pub fallbacks_total: u64,
}

/// An error: a status code and a one-line message.
pub struct DwacError {
    code: DwacStatus,
    message: CString,
}

impl DwacError {
    fn new(code: DwacStatus, message: impl Into<String>) -> DwacError {
        let mut m: Vec<u8> = message.into().into_bytes();
        m.retain(|&b| b != 0);
        DwacError { code, message: CString::new(m).unwrap_or_default() }
    }
}

impl From<CommitError> for DwacError {
    fn from(e: CommitError) -> DwacError {
        let code = match e {
            CommitError::TokenOutOfRange { .. } => DwacStatus::TokenOutOfRange,
            CommitError::SpecialToken { .. } => DwacStatus::SpecialToken,
            CommitError::Rejected { .. } => DwacStatus::Rejected,
            CommitError::Terminated => DwacStatus::Terminated,
            CommitError::RollbackTooFar { .. } => DwacStatus::RollbackTooFar,
            // An error of a later runtime: refused, with its message.
            _ => DwacStatus::Rejected,
        };
        DwacError::new(code, e.to_string())
    }
}

impl From<MaskError> for DwacError {
    fn from(e: MaskError) -> DwacError {
        let code = match e {
            MaskError::BufferTooSmall { .. } => DwacStatus::BufferTooSmall,
            // A worker thread's panic, or an error of a later runtime: a bug in dwac.
            _ => DwacStatus::Panic,
        };
        DwacError::new(code, e.to_string())
    }
}

/// Live handles (address and type of the boxes handed out): `free` releases only these, so a
/// second `free` of a handle, or a handle passed to the wrong `free`, does nothing.
fn live() -> &'static Mutex<HashSet<(usize, TypeId)>> {
    static LIVE: OnceLock<Mutex<HashSet<(usize, TypeId)>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

fn register<T: 'static>(b: Box<T>) -> *mut T {
    let p = Box::into_raw(b);
    live().lock().unwrap_or_else(|e| e.into_inner()).insert((p as usize, TypeId::of::<T>()));
    p
}

/// Drop the box behind `p` if it is a live handle of type `T`.
///
/// # Safety
/// `p` is null or was returned by [`register`].
unsafe fn release<T: 'static>(p: *mut T) {
    if p.is_null() {
        return;
    }
    let was_live = live().lock().unwrap_or_else(|e| e.into_inner()).remove(&(p as usize, TypeId::of::<T>()));
    if was_live {
        drop(Box::from_raw(p));
    }
}

/// Run `f`, catching panics; store the error (if any) in `*err`.
///
/// # Safety
/// `err` is null or valid for writes.
unsafe fn guard(err: *mut *mut DwacError, f: impl FnOnce() -> Result<(), DwacError>) -> DwacStatus {
    let r = catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(DwacError::new(DwacStatus::Panic, "internal error in dwac (a panic was caught)")));
    match r {
        Ok(()) => {
            if !err.is_null() {
                *err = ptr::null_mut();
            }
            DwacStatus::Ok
        }
        Err(e) => {
            let code = e.code;
            if !err.is_null() {
                *err = register(Box::new(e));
            }
            code
        }
    }
}

fn null_arg(what: &str) -> DwacError {
    DwacError::new(DwacStatus::InvalidArgument, format!("{what} is null"))
}

/// Hand `value` out as a new handle in `*out`.
///
/// # Safety
/// `out` is null or valid for writes.
unsafe fn hand_out<T: 'static>(
    out: *mut *mut T,
    value: impl FnOnce() -> Result<T, DwacError>,
) -> Result<(), DwacError> {
    if out.is_null() {
        return Err(null_arg("out"));
    }
    *out = register(Box::new(value()?));
    Ok(())
}

/// The library's version, e.g. `"0.1.0"` (a static string).
#[no_mangle]
pub extern "C" fn dwac_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// Open an artifact file (`.dwa` memory-mapped, or the `.dwa.zst` transport form) and validate
/// it fully. On success `*out` is a new handle (free it with [`dwac_artifact_free`]).
///
/// # Safety
/// `path` is null or a NUL-terminated string; `out` and `err` are null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_artifact_open(
    path: *const c_char,
    out: *mut *mut DwacArtifact,
    err: *mut *mut DwacError,
) -> DwacStatus {
    guard(err, || {
        if path.is_null() {
            return Err(null_arg("path"));
        }
        let path = CStr::from_ptr(path).to_string_lossy().into_owned();
        hand_out(out, || {
            let a = Artifact::open(&path).map_err(|e| DwacError::new(DwacStatus::Artifact, format!("{path}: {e}")))?;
            Ok(DwacArtifact { inner: a })
        })
    })
}

/// Open an artifact (or its zstd form) held in memory: the bytes are copied once into an
/// aligned buffer, then validated. `*out` as for [`dwac_artifact_open`].
///
/// # Safety
/// `data` is valid for reads of `len` bytes (or null with `len` 0); `out` and `err` are null
/// or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_artifact_from_bytes(
    data: *const u8,
    len: usize,
    out: *mut *mut DwacArtifact,
    err: *mut *mut DwacError,
) -> DwacStatus {
    guard(err, || {
        if data.is_null() && len > 0 {
            return Err(null_arg("data"));
        }
        let bytes = if len == 0 { &[][..] } else { std::slice::from_raw_parts(data, len) };
        hand_out(out, || {
            let a = Artifact::from_bytes(bytes).map_err(|e| DwacError::new(DwacStatus::Artifact, e.to_string()))?;
            Ok(DwacArtifact { inner: a })
        })
    })
}

/// Release an artifact. Matchers made from it stay valid (they share its tables). Null, or a
/// handle already released, is ignored.
///
/// # Safety
/// `a` is null or a handle from this library.
#[no_mangle]
pub unsafe extern "C" fn dwac_artifact_free(a: *mut DwacArtifact) {
    let _ = catch_unwind(AssertUnwindSafe(|| release(a)));
}

/// The vocabulary size (token ids are below it); 0 for null.
///
/// # Safety
/// `a` is null or a live artifact handle.
#[no_mangle]
pub unsafe extern "C" fn dwac_artifact_vocab_size(a: *const DwacArtifact) -> usize {
    a.as_ref().map_or(0, |a| a.inner.engine().vocab().len())
}

/// The words (`uint32_t`) a mask needs: `ceil(vocab_size / 32)`; 0 for null.
///
/// # Safety
/// `a` is null or a live artifact handle.
#[no_mangle]
pub unsafe extern "C" fn dwac_artifact_mask_words(a: *const DwacArtifact) -> usize {
    a.as_ref().map_or(0, |a| a.inner.engine().vocab().len().div_ceil(32))
}

/// A matcher at the start of the artifact's grammar. `*out` is a new handle (free it with
/// [`dwac_matcher_free`]).
///
/// # Safety
/// `a` is null or a live artifact handle; `out` and `err` are null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_new(
    a: *const DwacArtifact,
    out: *mut *mut DwacMatcher,
    err: *mut *mut DwacError,
) -> DwacStatus {
    guard(err, || {
        let a = a.as_ref().ok_or_else(|| null_arg("artifact"))?;
        hand_out(out, || Ok(DwacMatcher::new(Matcher::new(Arc::clone(a.inner.engine())))))
    })
}

/// A fork of `m` (O(1)): both go on independently. `*out` is a new handle.
///
/// # Safety
/// `m` is null or a live matcher handle; `out` and `err` are null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_clone(
    m: *const DwacMatcher,
    out: *mut *mut DwacMatcher,
    err: *mut *mut DwacError,
) -> DwacStatus {
    guard(err, || {
        let m = m.as_ref().ok_or_else(|| null_arg("matcher"))?;
        hand_out(out, || Ok(DwacMatcher::new(m.inner.clone())))
    })
}

/// Release a matcher. Null, or a handle already released, is ignored.
///
/// # Safety
/// `m` is null or a handle from this library.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_free(m: *mut DwacMatcher) {
    let _ = catch_unwind(AssertUnwindSafe(|| release(m)));
}

/// Fill the mask of allowed next tokens into `out` (`words` words): bit `v % 32` of `out[v /
/// 32]` is set iff token `v` is allowed. `words` may exceed [`dwac_artifact_mask_words`]
/// (padded logits): every bit past the vocabulary is cleared. Safe to call from several
/// threads at once on different matchers (or on one, if none of them changes it meanwhile).
/// A successful fill records what it did in the matcher (see
/// [`dwac_matcher_last_mask_counters`]).
///
/// # Safety
/// `m` is null or a live matcher handle; `out` is null or valid for writes of `words` aligned
/// `uint32_t`s; `err` is null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_fill_mask(
    m: *const DwacMatcher,
    out: *mut u32,
    words: usize,
    err: *mut *mut DwacError,
) -> DwacStatus {
    guard(err, || {
        let m = m.as_ref().ok_or_else(|| null_arg("matcher"))?;
        if out.is_null() {
            return Err(null_arg("out"));
        }
        if !out.is_aligned() {
            return Err(DwacError::new(DwacStatus::InvalidArgument, "out is not aligned for uint32_t"));
        }
        let out = std::slice::from_raw_parts_mut(out, words);
        let c = m.inner.fill_mask(out)?;
        let mut k = m.counters.lock().unwrap_or_else(|e| e.into_inner());
        k.undecided = c.undecided;
        k.fallbacks = c.fallbacks;
        k.reads = c.reads;
        k.masks += 1;
        k.undecided_total += u64::from(c.undecided);
        k.fallbacks_total += u64::from(c.fallbacks);
        Ok(())
    })
}

/// Store in `*out` what the matcher's mask fills did ([`DwacMaskCounters`]: the last successful
/// fill's counters, and totals over the matcher's life). A failed fill changes nothing.
/// [`DwacStatus::InvalidArgument`] if `m` or `out` is null.
///
/// # Safety
/// `m` is null or a live matcher handle; `out` is null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_last_mask_counters(
    m: *const DwacMatcher,
    out: *mut DwacMaskCounters,
) -> DwacStatus {
    guard(ptr::null_mut(), || {
        let m = m.as_ref().ok_or_else(|| null_arg("matcher"))?;
        if out.is_null() {
            return Err(null_arg("out"));
        }
        *out = *m.counters.lock().unwrap_or_else(|e| e.into_inner());
        Ok(())
    })
}

/// Commit one sampled token. On error the matcher is unchanged.
///
/// # Safety
/// `m` is null or a live matcher handle not used by another thread meanwhile; `err` is null
/// or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_commit(m: *mut DwacMatcher, token: u32, err: *mut *mut DwacError) -> DwacStatus {
    guard(err, || {
        let m = m.as_mut().ok_or_else(|| null_arg("matcher"))?;
        m.inner.commit(token)?;
        Ok(())
    })
}

/// Commit `n` tokens in turn, stopping at the first refused one (not committed; the error says
/// why). `*accepted` (if not null) is set to the number committed.
///
/// # Safety
/// `m` as for [`dwac_matcher_commit`]; `tokens` is valid for reads of `n` ids (or null with
/// `n` 0); `accepted` and `err` are null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_commit_tokens(
    m: *mut DwacMatcher,
    tokens: *const u32,
    n: usize,
    accepted: *mut usize,
    err: *mut *mut DwacError,
) -> DwacStatus {
    if !accepted.is_null() {
        *accepted = 0;
    }
    guard(err, || {
        let m = m.as_mut().ok_or_else(|| null_arg("matcher"))?;
        if tokens.is_null() && n > 0 {
            return Err(null_arg("tokens"));
        }
        let tokens = if n == 0 { &[][..] } else { std::slice::from_raw_parts(tokens, n) };
        let r = m.inner.commit_tokens(tokens);
        let done = r.as_ref().map_or_else(|e| e.accepted, |_| n);
        if !accepted.is_null() {
            *accepted = done;
        }
        r.map_err(|e| {
            let mut d = DwacError::from(e.error.clone());
            d.message = DwacError::new(d.code, e.to_string()).message;
            d
        })
    })
}

/// The length of the longest prefix of `tokens` that could be committed in turn, without
/// changing the matcher (a speculative draft's check); 0 for null arguments.
///
/// # Safety
/// `m` is null or a live matcher handle; `tokens` is valid for reads of `n` ids (or null).
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_validate_tokens(m: *const DwacMatcher, tokens: *const u32, n: usize) -> usize {
    let (Some(m), false) = (m.as_ref(), tokens.is_null()) else { return 0 };
    let tokens = std::slice::from_raw_parts(tokens, n);
    catch_unwind(AssertUnwindSafe(|| m.inner.validate_tokens(tokens))).unwrap_or(0)
}

/// Undo the last `n` commits.
///
/// # Safety
/// As for [`dwac_matcher_commit`].
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_rollback(m: *mut DwacMatcher, n: usize, err: *mut *mut DwacError) -> DwacStatus {
    guard(err, || {
        let m = m.as_mut().ok_or_else(|| null_arg("matcher"))?;
        m.inner.rollback(n)?;
        Ok(())
    })
}

/// Back to the start of the grammar (null is ignored).
///
/// # Safety
/// As for [`dwac_matcher_commit`].
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_reset(m: *mut DwacMatcher) {
    if let Some(m) = m.as_mut() {
        let _ = catch_unwind(AssertUnwindSafe(|| m.inner.reset()));
    }
}

/// Has an end token been committed? (Then every commit is refused and the mask is empty.)
/// False for null.
///
/// # Safety
/// `m` is null or a live matcher handle.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_is_terminated(m: *const DwacMatcher) -> bool {
    m.as_ref().is_some_and(|m| m.inner.is_terminated())
}

/// May the output end here (an end token is allowed; nothing ended it yet)? False for null.
///
/// # Safety
/// `m` is null or a live matcher handle.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_is_accepting(m: *const DwacMatcher) -> bool {
    m.as_ref().is_some_and(|m| catch_unwind(AssertUnwindSafe(|| m.inner.is_accepting())).unwrap_or(false))
}

/// The tokens the grammar forces from here (jump-forward): while exactly one token is allowed,
/// that token, at most `cap` of them, written to `out`; `*n` (if not null) is set to how many.
/// The matcher is unchanged.
///
/// # Safety
/// `m` is null or a live matcher handle; `out` is valid for writes of `cap` ids (or null with
/// `cap` 0); `n` and `err` are null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn dwac_matcher_forced_tokens(
    m: *const DwacMatcher,
    out: *mut u32,
    cap: usize,
    n: *mut usize,
    err: *mut *mut DwacError,
) -> DwacStatus {
    if !n.is_null() {
        *n = 0;
    }
    guard(err, || {
        let m = m.as_ref().ok_or_else(|| null_arg("matcher"))?;
        if out.is_null() && cap > 0 {
            return Err(null_arg("out"));
        }
        let forced = m.inner.forced_tokens(cap)?;
        if !forced.is_empty() {
            std::slice::from_raw_parts_mut(out, forced.len()).copy_from_slice(&forced);
        }
        if !n.is_null() {
            *n = forced.len();
        }
        Ok(())
    })
}

/// The error's status code ([`DwacStatus::InvalidArgument`] for null).
///
/// # Safety
/// `e` is null or a live error handle.
#[no_mangle]
pub unsafe extern "C" fn dwac_error_code(e: *const DwacError) -> DwacStatus {
    e.as_ref().map_or(DwacStatus::InvalidArgument, |e| e.code)
}

/// The error's one-line message, valid until the error is freed (`""` for null).
///
/// # Safety
/// `e` is null or a live error handle.
#[no_mangle]
pub unsafe extern "C" fn dwac_error_message(e: *const DwacError) -> *const c_char {
    match e.as_ref() {
        Some(e) => e.message.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Release an error. Null, or a handle already released, is ignored.
///
/// # Safety
/// `e` is null or a handle from this library.
#[no_mangle]
pub unsafe extern "C" fn dwac_error_free(e: *mut DwacError) {
    let _ = catch_unwind(AssertUnwindSafe(|| release(e)));
}
