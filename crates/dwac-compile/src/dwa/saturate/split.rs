//! The saturation of a lexer state's classes in two parts, its long lexings apart
//! ([`saturate_split`]), and a saturation made for some classes serving a later state whose
//! lexings are all among them ([`Saturated::restricted`]): docs/CONSTRUCTION.md, "Saturated
//! lexings".

use std::sync::Arc;

use super::{saturate_sub, Saturated, SubTrie};
use crate::dwa::compose::Step;
use crate::dwa::determinize::{DState, LocalDwa};
use crate::dwa::race::Race;
use crate::dwa::set_pool::SetPool;
use crate::dwa::terminal_dwa::{Sig, TokenClass};
use crate::dwa::FastMap;
use crate::threads::carry;
use dwac_runtime::unstable::LrTables;

impl Saturated {
    /// This saturation, made for classes whose lexings were `made_for` (`decided` indexes
    /// them), for other `classes` whose lexings are all among those: the same automata, their
    /// outputs renamed to indices of `classes`, and the outputs of lexings `classes` lacks
    /// dropped. Each class's output depends only on its own lexings (accepted on a stack or
    /// not), so the automata decide every one of `classes` as its own saturation would; they
    /// may read deeper, for the classes dropped.
    pub fn restricted(&self, made_for: &[Vec<Sig>], classes: &[TokenClass]) -> Saturated {
        let index: FastMap<&[Sig], usize> = classes.iter().enumerate().map(|(i, c)| (&c.sigs[..], i)).collect();
        let one = |dwa: &LocalDwa, decided: &[usize]| -> (Arc<LocalDwa>, Vec<usize>) {
            let to: Vec<Option<usize>> = decided.iter().map(|&i| index.get(&made_for[i][..]).copied()).collect();
            let mut now: Vec<usize> = to.iter().flatten().copied().collect();
            now.sort_unstable();
            now.dedup();
            let map: Vec<Option<u32>> = to.iter().map(|t| t.map(|t| now.partition_point(|&x| x < t) as u32)).collect();
            (Arc::new(rename_outputs(dwa, &map)), now)
        };
        let (dwa, decided) = one(&self.dwa, &self.decided);
        let second = self.second.as_ref().map(|(d, dec)| one(d, dec));
        Saturated { dwa, decided, ticks: self.ticks, second }
    }
}

/// `dwa` with each output class `k` renamed `map[k]`, or dropped where that is `None`.
fn rename_outputs(dwa: &LocalDwa, map: &[Option<u32>]) -> LocalDwa {
    let mut sets = SetPool::new();
    let mut renamed: FastMap<u32, u32> = FastMap::default();
    let mut set = |id: u32| -> u32 {
        if id == 0 {
            return 0;
        }
        *renamed
            .entry(id)
            .or_insert_with(|| sets.intern(dwa.sets.get(id).iter().filter_map(|&k| map[k as usize]).collect()))
    };
    let start_rho = set(dwa.start_rho);
    let states = dwa
        .states
        .iter()
        .map(|st| DState {
            edges: st.edges.iter().map(|&(label, target, rho)| (label, target, set(rho))).collect(),
            default: (st.default.0, set(st.default.1)),
        })
        .collect();
    LocalDwa { start: dwa.start, start_rho, states, sets, links: dwa.links.clone(), keys: dwa.keys.clone() }
}

/// Lexings longer than this many steps are saturated apart by [`saturate_split`]. (Lua's
/// lexer state 0 under qwen3, in ticks, short + long: 73M + 130M at depth 8, 78M + 129M at 16,
/// 90M + 127M at 32, 106M + 121M at 48; 245M together.)
pub const SPLIT_DEPTH: u32 = 16;

/// The classes of `classes` whose lexings are all at most [`SPLIT_DEPTH`] steps long, and the
/// others, by index; `None` unless both are there.
pub fn split(nodes: &[(u32, Step)], classes: &[TokenClass]) -> Option<(Vec<usize>, Vec<usize>)> {
    let depth = |n: u32| {
        let (mut n, mut d) = (n, 0u32);
        while n != 0 {
            n = nodes[n as usize].0;
            d += 1;
        }
        d
    };
    let (short, long): (Vec<usize>, Vec<usize>) =
        (0..classes.len()).partition(|&i| classes[i].sigs.iter().all(|&(n, _)| depth(n) <= SPLIT_DEPTH));
    (!short.is_empty() && !long.is_empty()).then_some((short, long))
}

/// Classes a state must have for [`split`] to apply: a small state saturates fast (Lua's
/// 68-class states under qwen3: 1.6M ticks together), and split, its saturation could not stop
/// a hopeless forward restart early (see [`saturate_split`]).
pub const SPLIT_MIN_CLASSES: usize = 256;

/// [`saturate_sub`] for the classes `short` and `long` of `classes` ([`split`]), each apart
/// and at once (the long ones on a thread of their own), as one automaton and a second one
/// beside it; `None` if either fails or the race is lost. In a race, the long ones start only
/// once the forward build is over (so that no more than two threads compute while it runs),
/// and not at all if it succeeded: a split saturation decides only where the forward build
/// fails. (Where it succeeds, the saturation would have to be cheaper in all; regex's states
/// under qwen3 build forward in a quarter of their saturation.) The long lexings of a grammar like
/// Lua's (runs of 60–114 operators) grow the saturated automaton with the square of their
/// length, and determinized together with the short ones they swell every subset: apart, Lua's
/// lexer state 0 under qwen3 saturates in 0.38 s (short, 6,928 states) and 0.44 s (long, 57
/// states), where together it took 1.0 s.
pub fn saturate_split(
    lr: &LrTables,
    terms: &SetPool,
    nodes: &[(u32, Step)],
    classes: &[TokenClass],
    (short, long): (Vec<usize>, Vec<usize>),
    race: Option<&Race>,
) -> Option<Saturated> {
    let part = |ix: &[usize]| -> Vec<TokenClass> { ix.iter().map(|&i| classes[i].clone()).collect() };
    let (a, b) = (part(&short), part(&long));
    let one = |cs: &[TokenClass]| saturate_sub(lr, terms, nodes, SubTrie::of(terms, nodes, cs)?, race);
    let long_half = || match race {
        Some(r) if r.wait_forward_over() => None,
        _ => one(&b),
    };
    let (sa, sb) = std::thread::scope(|scope| {
        let side = std::thread::Builder::new().name("dwac-saturate".into()).spawn_scoped(scope, carry(long_half)).ok();
        let sa = one(&a);
        let sb = match side {
            Some(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            None => long_half(),
        };
        (sa, sb)
    });
    let (sa, sb) = (sa?, sb?);
    let back = |ix: &[usize], dec: &[usize]| -> Vec<usize> { dec.iter().map(|&i| ix[i]).collect() };
    Some(Saturated {
        dwa: sa.dwa,
        decided: back(&short, &sa.decided),
        ticks: sa.ticks + sb.ticks,
        second: Some((sb.dwa, back(&long, &sb.decided))),
    })
}
