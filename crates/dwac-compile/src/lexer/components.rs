//! The lexer's components built on two threads, and the process-wide cache of component DFAs.

use super::{build_component, ComponentDfa};
use crate::CompileError;
use dwac_grammar::Terminal;

/// [`shared_component`] of each component (`acts[i]`: its active terminals), in order, on the
/// caller's thread and one helper: the components are independent, and a schema's large
/// ones (each length-bounded string is a component of its own) take most of the lexer's time.
/// The results do not depend on which thread built what.
pub(super) fn build_components(terminals: &[Terminal], acts: &[Vec<bool>]) -> Vec<Result<ComponentDfa, CompileError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(act) = acts.get(i) else { return done };
            done.push((i, shared_component(terminals, act)));
        }
    };
    let mut all = if acts.len() < 2 {
        work()
    } else {
        std::thread::scope(|s| {
            // (If no thread can be started, this one builds them all.)
            let helper =
                std::thread::Builder::new().name("dwac-lexer".into()).spawn_scoped(s, crate::threads::carry(work));
            let mut mine = work();
            if let Ok(h) = helper {
                mine.extend(h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            }
            mine
        })
    };
    all.sort_by_key(|&(i, _)| i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// What a component's DFA depends on: per active terminal, in id order, its patterns, whether
/// it is lazy and whether it is a token terminal (whose patterns are not checked to be UTF-8):
/// nothing else of a terminal enters [`build_component`].
type ComponentKey = Vec<(String, Vec<String>, Vec<String>, bool, bool)>;

/// Component DFAs the process keeps (the most recently used first), and the transition words
/// they may hold in all (a memory bound, 32 MB). A component of more than a quarter of that is
/// not kept: one very large schema (a Kubernetes-sized one's constrained strings) would
/// otherwise push out the formats every schema shares (`date-time` is 11,000 states).
const COMPONENT_CACHE: usize = 128;
const COMPONENT_CACHE_WORDS: usize = 8 << 20;

/// [`build_component`], through a cache kept for the process: a component with the same
/// patterns as one built before (the string formats of JSON Schema, `date-time` above all,
/// recur from schema to schema) is copied rather than built again, its accept sets renamed to
/// this grammar's terminal ids (the cache keeps them by position among the component's
/// terminals). The key holds the patterns themselves (compared in full), so a hit is the DFA
/// the build would give, and the tables do not depend on what the process compiled before.
fn shared_component(terminals: &[Terminal], active: &[bool]) -> Result<ComponentDfa, CompileError> {
    type Entry = (ComponentKey, ComponentDfa);
    static CACHE: std::sync::Mutex<Vec<Entry>> = std::sync::Mutex::new(Vec::new());
    let ids: Vec<u32> =
        (0..terminals.len() as u32).filter(|&i| active.get(i as usize).copied().unwrap_or(true)).collect();
    let key: ComponentKey = ids
        .iter()
        .map(|&i| {
            let t = &terminals[i as usize];
            (t.regex.clone(), t.also.clone(), t.except.clone(), t.lazy, t.tokens.is_some())
        })
        .collect();
    {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = cache.iter().position(|(k, _)| *k == key) {
            let entry = cache.remove(at);
            let c = &entry.1;
            let accs = c.accs.iter().map(|a| a.iter().map(|&p| ids[p as usize]).collect()).collect();
            let part = ComponentDfa { n: c.n, class: c.class.clone(), k: c.k, trans: c.trans.clone(), accs };
            cache.insert(0, entry);
            return Ok(part);
        }
    }
    let part = build_component(terminals, active)?;
    // (Every accepted terminal is one of the component's: `build_component` reads no other.)
    let position = |t: u32| ids.binary_search(&t).map_or(u32::MAX, |p| p as u32);
    let accs = part.accs.iter().map(|a| a.iter().map(|&t| position(t)).collect()).collect();
    let cached = ComponentDfa { n: part.n, class: part.class.clone(), k: part.k, trans: part.trans.clone(), accs };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cached.trans.len() <= COMPONENT_CACHE_WORDS / 4 && !cache.iter().any(|(k, _)| *k == key) {
        cache.insert(0, (key, cached));
        cache.truncate(COMPONENT_CACHE);
        let mut words = 0;
        cache.retain(|(_, c)| {
            words += c.trans.len();
            words <= COMPONENT_CACHE_WORDS
        });
    }
    Ok(part)
}
