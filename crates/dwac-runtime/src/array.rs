//! [`Array<T>`]: a table column that is either an owned `Vec<T>` (built by the compiler) or a
//! zero-copy view of an artifact's bytes (a mapped file or an aligned heap buffer), shared by
//! every engine opened from that artifact. Both read as `&[T]`.
//!
//! Views are made with `zerocopy`'s `<[T]>::ref_from_bytes`, which checks size and alignment
//! once, when the view is made; the column then caches the slice's address, so reading it costs
//! what reading a `Vec` costs (measured: going through the checked slicing on every read made
//! `commit` 27% slower).

use std::sync::Arc;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Element types a table column may hold: plain little-endian integers.
pub trait Elem: FromBytes + IntoBytes + Immutable + KnownLayout + Copy + std::fmt::Debug + PartialEq + 'static {}
impl Elem for u8 {}
impl Elem for u16 {}
impl Elem for u32 {}
impl Elem for i32 {}
impl Elem for u64 {}

/// The bytes an artifact's views point into. Cloning shares them.
#[derive(Clone)]
pub struct Backing(Arc<BackingInner>);

enum BackingInner {
    /// A heap buffer allocated as `u64`s, so it is 8-byte aligned.
    Heap(Vec<u64>, usize),
    /// A borrowed static buffer (e.g. `include_bytes!` behind an aligned wrapper).
    Static(&'static [u8]),
    /// A read-only file mapping (page aligned).
    #[cfg(feature = "mmap")]
    Mmap(memmap2::Mmap),
}

impl Backing {
    /// Copy `bytes` into a fresh 8-byte-aligned heap buffer.
    pub fn copy_from(bytes: &[u8]) -> Backing {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        words.as_mut_bytes()[..bytes.len()].copy_from_slice(bytes);
        Backing(Arc::new(BackingInner::Heap(words, bytes.len())))
    }

    /// Take an 8-byte-aligned buffer holding `len` bytes.
    pub fn from_words(words: Vec<u64>, len: usize) -> Backing {
        let len = len.min(words.len() * 8);
        Backing(Arc::new(BackingInner::Heap(words, len)))
    }

    /// Use a static buffer as it is (it must be aligned for the views taken of it; the
    /// artifact reader checks).
    pub fn from_static(bytes: &'static [u8]) -> Backing {
        Backing(Arc::new(BackingInner::Static(bytes)))
    }

    #[cfg(feature = "mmap")]
    /// Map a file's bytes (feature `mmap`).
    pub fn from_mmap(map: memmap2::Mmap) -> Backing {
        Backing(Arc::new(BackingInner::Mmap(map)))
    }

    #[inline]
    /// The bytes held.
    pub fn bytes(&self) -> &[u8] {
        match &*self.0 {
            BackingInner::Heap(w, len) => w.as_bytes().get(..*len).unwrap_or(&[]),
            BackingInner::Static(b) => b,
            #[cfg(feature = "mmap")]
            BackingInner::Mmap(m) => m,
        }
    }

    /// Is this a file mapping?
    pub fn is_mapped(&self) -> bool {
        match &*self.0 {
            #[cfg(feature = "mmap")]
            BackingInner::Mmap(_) => true,
            _ => false,
        }
    }
}

impl std::fmt::Debug for Backing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Backing({} bytes{})", self.bytes().len(), if self.is_mapped() { ", mapped" } else { "" })
    }
}

/// A table column: owned, or a view of `len` elements at byte `start` of a [`Backing`].
///
/// Reading is as cheap as reading a `Vec`: `ptr`/`len` describe the current storage and are
/// refreshed whenever it changes, so `deref` is one `from_raw_parts` with no branch.
pub struct Array<T: Elem> {
    /// Points at `repr`'s elements (an owned `Vec`'s buffer, or the view's bytes inside the
    /// backing). Valid as long as `repr` is neither dropped nor reallocated: `repr` lives in the
    /// same struct, a view's backing is an immutable buffer kept alive by its `Arc`, and every
    /// mutation of an owned `Vec` goes through [`VecGuard`], which refreshes `ptr` and `len`.
    ptr: std::ptr::NonNull<T>,
    len: usize,
    repr: Repr<T>,
}

// SAFETY: `Array<T>` owns its storage (a `Vec<T>` or a shared immutable `Backing`); the raw
// pointer only caches the address of that storage. `T` is a plain integer (`Elem`), so sharing
// and sending are as safe as for `Vec<T>` and `Arc<[u8]>`.
unsafe impl<T: Elem + Send> Send for Array<T> {}
// SAFETY: as above; `&Array<T>` only gives `&[T]`.
unsafe impl<T: Elem + Sync> Sync for Array<T> {}

enum Repr<T> {
    Owned(Vec<T>),
    View { buf: Backing, start: usize },
}

impl<T: Elem> Array<T> {
    /// An empty owned array.
    pub const fn new() -> Array<T> {
        Array { ptr: std::ptr::NonNull::dangling(), len: 0, repr: Repr::Owned(Vec::new()) }
    }

    fn owned(v: Vec<T>) -> Array<T> {
        let mut a = Array { ptr: std::ptr::NonNull::dangling(), len: 0, repr: Repr::Owned(v) };
        a.refresh();
        a
    }

    /// Re-derive `ptr`/`len` from the owned vector (after it may have changed).
    fn refresh(&mut self) {
        if let Repr::Owned(v) = &mut self.repr {
            self.len = v.len();
            self.ptr = std::ptr::NonNull::new(v.as_mut_ptr()).unwrap_or(std::ptr::NonNull::dangling());
        }
    }

    /// A view of `len` elements at byte offset `start` of `buf`, if they are in bounds and
    /// aligned for `T` (checked by `zerocopy`).
    pub fn view(buf: &Backing, start: usize, len: usize) -> Option<Array<T>> {
        let end = len.checked_mul(size_of::<T>())?.checked_add(start)?;
        let slice = <[T]>::ref_from_bytes(buf.bytes().get(start..end)?).ok()?;
        let ptr = std::ptr::NonNull::from(slice).cast::<T>();
        Some(Array { ptr, len: slice.len(), repr: Repr::View { buf: buf.clone(), start } })
    }

    #[inline]
    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` points at `len` initialized, properly aligned elements owned by
        // `self.repr` (see the field's invariant), which lives as long as `&self`, and nothing
        // mutates them while `&self` is borrowed.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements copied once into a fresh heap buffer that clones share (a clone is a
    /// reference count, not a copy): for columns copied often, such as a tokenizer's
    /// vocabulary, which every compile and every artifact opened with it takes.
    pub fn shared(xs: &[T]) -> Array<T> {
        let buf = Backing::copy_from(xs.as_bytes());
        Array::view(&buf, 0, xs.len()).expect("a fresh heap buffer is aligned and holds the elements")
    }

    /// Is this a view of an artifact (not an owned copy)?
    pub fn is_view(&self) -> bool {
        matches!(self.repr, Repr::View { .. })
    }

    /// Byte offset of a view in its backing.
    pub fn view_offset(&self) -> Option<usize> {
        match &self.repr {
            Repr::View { start, .. } => Some(*start),
            Repr::Owned(_) => None,
        }
    }

    /// Mutable access to the owned vector, copying a view first (copy on write). The guard
    /// refreshes the cached pointer when dropped.
    pub fn to_mut(&mut self) -> VecGuard<'_, T> {
        if let Repr::View { .. } = self.repr {
            *self = Array::owned(self.as_slice().to_vec());
        }
        VecGuard { array: self }
    }

    /// Append `x` (an owned array; a view is copied first).
    pub fn push(&mut self, x: T) {
        self.to_mut().push(x);
    }

    /// Append `xs` (an owned array; a view is copied first).
    pub fn extend_from_slice(&mut self, xs: &[T]) {
        self.to_mut().extend_from_slice(xs);
    }

    /// The elements as a `Vec` (copied if this is a view).
    pub fn into_vec(self) -> Vec<T> {
        match self.repr {
            Repr::Owned(v) => v,
            Repr::View { .. } => self.as_slice().to_vec(),
        }
    }
}

/// Mutable access to an owned [`Array`]'s vector; refreshes the array's cached pointer on drop.
pub struct VecGuard<'a, T: Elem> {
    array: &'a mut Array<T>,
}

impl<T: Elem> std::ops::Deref for VecGuard<'_, T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        match &self.array.repr {
            Repr::Owned(v) => v,
            Repr::View { .. } => unreachable!("to_mut converts views to owned vectors"),
        }
    }
}

impl<T: Elem> std::ops::DerefMut for VecGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        match &mut self.array.repr {
            Repr::Owned(v) => v,
            Repr::View { .. } => unreachable!("to_mut converts views to owned vectors"),
        }
    }
}

impl<T: Elem> Drop for VecGuard<'_, T> {
    fn drop(&mut self) {
        self.array.refresh();
    }
}

impl<T: Elem> std::ops::Deref for Array<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Elem> Default for Array<T> {
    fn default() -> Self {
        Array::new()
    }
}

impl<T: Elem> Clone for Array<T> {
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Owned(v) => Array::owned(v.clone()),
            // Same backing, same address: the cached pointer stays valid.
            Repr::View { buf, start } => {
                Array { ptr: self.ptr, len: self.len, repr: Repr::View { buf: buf.clone(), start: *start } }
            }
        }
    }
}

impl<T: Elem> std::fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<T: Elem> PartialEq for Array<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Elem + Eq> Eq for Array<T> {}

impl<T: Elem> PartialEq<Vec<T>> for Array<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Elem> PartialEq<[T]> for Array<T> {
    fn eq(&self, other: &[T]) -> bool {
        self.as_slice() == other
    }
}

impl<T: Elem> From<Vec<T>> for Array<T> {
    fn from(v: Vec<T>) -> Self {
        Array::owned(v)
    }
}

impl<T: Elem> FromIterator<T> for Array<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Array::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Elem> Extend<T> for Array<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.to_mut().extend(iter);
    }
}

impl<'a, T: Elem> IntoIterator for &'a Array<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// A column of `u32` values that an artifact may store narrowed to `u16` (FORMAT.md, section
/// flag `SECTION_NARROW`): when every value is at most [`NARROW_MAX`] or is `u32::MAX` (the
/// tables' `DEAD`/`NONE`, stored as `0xFFFF`). The big index columns (lexer transitions, the
/// Parser DWA's edge labels, targets and outputs) fit in 16 bits for most grammars, which
/// halves them. Built tables are always [`Col::Wide`]; the writer narrows what fits, and a
/// reader's view of a narrowed section is [`Col::Narrow`].
#[derive(Clone, Debug)]
pub enum Col {
    /// 32-bit entries.
    Wide(Array<u32>),
    /// 16-bit entries (every value at most [`NARROW_MAX`]; `0xFFFF` stands for `u32::MAX`).
    Narrow(Array<u16>),
}

/// The largest value a narrowed column stores as itself (`0xFFFF` stands for `u32::MAX`).
pub const NARROW_MAX: u32 = 0xFFFE;

#[inline]
fn widen(x: u16) -> u32 {
    if x == u16::MAX {
        u32::MAX
    } else {
        x as u32
    }
}

impl Col {
    /// An empty owned column of 32-bit entries.
    pub const fn new() -> Col {
        Col::Wide(Array::new())
    }

    #[inline]
    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            Col::Wide(a) => a.len(),
            Col::Narrow(a) => a.len(),
        }
    }

    #[inline]
    /// Has the column no entries?
    #[cfg(feature = "unstable")]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` (panics if out of bounds, like indexing a slice).
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        match self {
            Col::Wide(a) => a[i],
            Col::Narrow(a) => widen(a[i]),
        }
    }

    /// Every value, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Values `a..b`, in order.
    pub fn range(&self, a: usize, b: usize) -> impl Iterator<Item = u32> + '_ {
        (a..b).map(move |i| self.get(i))
    }

    /// Is every value [`u32::MAX`] or below `n`, and none `not`? One branch-free pass over
    /// the slice, so that it vectorizes: a lexer's transition table is checked at every open.
    pub fn all_below_or_max_except(&self, n: u32, not: u32) -> bool {
        match self {
            Col::Wide(a) => !a.iter().fold(false, |bad, &s| bad | ((s != u32::MAX) & (s >= n)) | (s == not)),
            Col::Narrow(a) => {
                // (Narrow `0xFFFF` is `u32::MAX`; any other value is itself.)
                let not_max = not == u32::MAX;
                !a.iter().fold(false, |bad, &s| {
                    let max = s == u16::MAX;
                    bad | (!max & (s as u32 >= n)) | (max & not_max) | (!max & (s as u32 == not))
                })
            }
        }
    }

    /// Does the column hold `x`?
    #[cfg(feature = "unstable")]
    pub fn contains(&self, x: u32) -> bool {
        self.iter().any(|y| y == x)
    }

    /// The index of `x` in the sorted range `a..b`, if it is there.
    #[inline]
    pub fn search(&self, a: usize, b: usize, x: u32) -> Option<usize> {
        match self {
            Col::Wide(c) => c[a..b].binary_search(&x).ok().map(|i| a + i),
            Col::Narrow(c) => {
                if x > NARROW_MAX {
                    return None;
                }
                c[a..b].binary_search(&(x as u16)).ok().map(|i| a + i)
            }
        }
    }

    /// The values as `u16`s, if every one fits (see the type's docs).
    #[cfg(feature = "unstable")]
    pub fn narrowed(&self) -> Option<Vec<u16>> {
        self.iter()
            .map(|x| match x {
                u32::MAX => Some(u16::MAX),
                x if x <= NARROW_MAX => Some(x as u16),
                _ => None,
            })
            .collect()
    }

    /// Mutable access to the values as an owned `u32` vector (a narrow or viewed column is
    /// copied first).
    #[cfg(feature = "unstable")]
    pub fn to_mut(&mut self) -> VecGuard<'_, u32> {
        if let Col::Narrow(_) = self {
            *self = Col::Wide(self.iter().collect());
        }
        match self {
            Col::Wide(a) => a.to_mut(),
            Col::Narrow(_) => unreachable!("widened above"),
        }
    }

    /// Append `x` (widening a narrow column first if need be).
    #[cfg(feature = "unstable")]
    pub fn push(&mut self, x: u32) {
        self.to_mut().push(x);
    }

    /// Is this a view of an artifact (not an owned copy)?
    #[cfg(feature = "unstable")]
    pub fn is_view(&self) -> bool {
        match self {
            Col::Wide(a) => a.is_view(),
            Col::Narrow(a) => a.is_view(),
        }
    }

    /// The entries as 32-bit values.
    #[cfg(feature = "unstable")]
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

impl Default for Col {
    fn default() -> Self {
        Col::new()
    }
}

/// Equal values, whatever the widths.
impl PartialEq for Col {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Col {}

impl From<Vec<u32>> for Col {
    fn from(v: Vec<u32>) -> Self {
        Col::Wide(v.into())
    }
}

impl From<Array<u32>> for Col {
    fn from(a: Array<u32>) -> Self {
        Col::Wide(a)
    }
}

impl FromIterator<u32> for Col {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        Col::Wide(iter.into_iter().collect())
    }
}

// (The tests build tables with the writer's side: feature `unstable`.)
#[cfg(all(test, feature = "unstable"))]
mod tests {
    use super::*;

    #[test]
    fn narrow_columns_read_like_wide_ones() {
        let wide: Col = vec![0, 7, 0xFFFE, u32::MAX, 3].into();
        let n = wide.narrowed().expect("fits");
        assert_eq!(n, vec![0, 7, 0xFFFE, 0xFFFF, 3]);
        let narrow = Col::Narrow(n.into());
        assert_eq!(narrow, wide);
        assert_eq!(narrow.get(3), u32::MAX);
        assert_eq!(
            (narrow.search(0, 3, 7), narrow.search(0, 3, 8), narrow.search(0, 3, 0x1_0000)),
            (Some(1), None, None)
        );
        assert_eq!(wide.search(1, 3, 0xFFFE), Some(2));
        let too_big: Col = vec![0xFFFF].into();
        assert!(too_big.narrowed().is_none(), "0xFFFF itself is not representable");
        let mut m = narrow.clone();
        m.push(1 << 20);
        assert!(matches!(m, Col::Wide(_)) && m.get(5) == 1 << 20 && m.len() == 6);
    }

    #[test]
    fn the_branch_free_target_check_agrees_with_the_plain_one_on_both_widths() {
        let cols: [Vec<u32>; 4] = [vec![0, 5, u32::MAX, 2], vec![0, 6, 1], vec![u32::MAX, 3], vec![]];
        for v in cols {
            let wide: Col = v.clone().into();
            let narrow = Col::Narrow(wide.narrowed().expect("fits").into());
            for n in [0, 3, 6, 7] {
                for not in [0, 2, 5, 9, u32::MAX] {
                    let plain = v.iter().all(|&s| (s == u32::MAX || s < n) && s != not);
                    assert_eq!(wide.all_below_or_max_except(n, not), plain, "{v:?} {n} {not}");
                    assert_eq!(narrow.all_below_or_max_except(n, not), plain, "{v:?} {n} {not} narrow");
                }
            }
        }
    }

    #[test]
    fn shared_arrays_clone_without_copying() {
        let a = Array::shared(&[1u32, 2, 3]);
        let b = a.clone();
        assert_eq!((&a[..], a.as_ptr()), (&[1, 2, 3][..], b.as_ptr()));
    }

    #[test]
    fn views_read_like_owned_columns_and_refuse_bad_bounds_or_alignment() {
        let mut bytes = vec![0u8; 24];
        for (i, x) in [7u32, 8, 9, 10, 11].iter().enumerate() {
            bytes[4 + 4 * i..8 + 4 * i].copy_from_slice(&x.to_le_bytes());
        }
        let buf = Backing::copy_from(&bytes);
        let a: Array<u32> = Array::view(&buf, 4, 5).expect("in bounds and aligned");
        assert_eq!(&a[..], &[7, 8, 9, 10, 11]);
        assert!(a.is_view());
        assert_eq!(a, Array::from(vec![7, 8, 9, 10, 11]));
        assert!(Array::<u32>::view(&buf, 4, 6).is_none(), "past the end");
        assert!(Array::<u32>::view(&buf, 2, 1).is_none(), "misaligned");
        assert!(Array::<u64>::view(&buf, 4, 1).is_none(), "misaligned for u64");
        assert!(Array::<u32>::view(&buf, usize::MAX - 2, 1).is_none(), "overflow");
        let mut b = a.clone();
        b.push(12);
        assert!(!b.is_view());
        assert_eq!(b.len(), 6);
        assert_eq!(a.len(), 5, "copy on write leaves the view alone");
    }
}
