//! `dwac compile`: one or many inputs (in parallel, each on a thread of its own) to artifacts.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use dwac_compile::artifact::{self, artifact_bytes, write_atomically, TokenizerInfo};
use dwac_compile::dwa::terminal_dwa::{MAX_LEXINGS, MAX_STEPS};
use dwac_compile::probe::{probe_masks, MaskProbe, ProbeOptions};
use dwac_compile::threads::{with_stop, Stop};
use dwac_compile::EngineOptions;
use dwac_vocab::Tokenizer;
use serde_json::json;

use crate::args::{CompileArgs, CompileOpts};
use crate::load::{build, load_tokenizer, schema_options, Source};
use crate::report::{lexer_state_bar, mask_stats_json, panic_message, print_compiled};
use crate::watchdog::Watchdog;
use dwac_measure::accounts::Account;

/// Where each input's artifact goes: `-o FILE` for one input; `-o DIR/<stem>.dwa` for several
/// (or an existing directory); `artifacts/<stem>.dwa` by default (`.dwa.zst` with `--zstd`).
pub(crate) fn output_paths(args: &CompileArgs, sources: &[Source]) -> Result<Vec<PathBuf>> {
    // (`--cache-dir`: each input's file name is its key, known once it is compiled.)
    if let Some(dir) = &args.cache_dir {
        return Ok(vec![dir.clone(); sources.len()]);
    }
    let ext = if args.zstd { "dwa.zst" } else { "dwa" };
    let stem = |s: &Source| match s {
        Source::File(p) => p.file_stem().map_or_else(|| "out".to_string(), |x| x.to_string_lossy().to_string()),
        Source::Regex(_) => "regex".to_string(),
    };
    let dir_mode = |o: &Path| sources.len() > 1 || o.is_dir() || o.as_os_str().to_string_lossy().ends_with('/');
    let paths: Vec<PathBuf> = sources
        .iter()
        .map(|s| match &args.output {
            Some(o) if dir_mode(o) => o.join(format!("{}.{ext}", stem(s))),
            Some(o) => o.clone(),
            None => PathBuf::from("artifacts").join(format!("{}.{ext}", stem(s))),
        })
        .collect();
    let mut seen = std::collections::HashMap::new();
    for (p, s) in paths.iter().zip(sources) {
        if let Some(prev) = seen.insert(p.clone(), s.display()) {
            bail!("{} and {} would both be written to {}", prev, s.display(), p.display());
        }
    }
    Ok(paths)
}

/// Compile one source and write its artifact (to `out`, or with `by_key` into the directory
/// `out` under its cache key); the JSON record of the result.
pub(crate) fn compile_one(
    source: &Source,
    (out, by_key): (&Path, bool),
    args_zstd: Option<(i32, bool)>,
    opts: &CompileOpts,
    tokenizer: &Tokenizer,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<String>,
) -> Result<serde_json::Value> {
    let what = source.display();
    let built = build(source, opts, tokenizer.vocab(), progress)?;
    for w in &built.warnings {
        eprintln!("warning: {w}");
    }
    let t0 = Instant::now();
    let tok = TokenizerInfo { name: tokenizer.name().to_string(), fingerprint: tokenizer.fingerprint() };
    let key = by_key
        .then(|| artifact::cache_key(&built.info, &tok.fingerprint, &schema_options(opts), &EngineOptions::default()));
    let keyed;
    let out = match &key {
        Some(k) => {
            std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("{what}: creating {}: {e}", out.display()))?;
            keyed = out.join(format!("{k}.dwa"));
            keyed.as_path()
        }
        None => out,
    };
    let raw = artifact_bytes(
        &built.engine,
        &built.info,
        &tok,
        &built.stats,
        &schema_options(opts),
        &EngineOptions::default(),
    );
    let bytes = if let Some((level, without_vocabulary)) = args_zstd {
        let compress = if without_vocabulary { artifact::compress_without_vocabulary } else { artifact::compress };
        compress(&raw, level).map_err(|e| anyhow::anyhow!("{what}: compressing: {e}"))?
    } else {
        raw.clone()
    };
    write_atomically(out, &bytes).map_err(|e| anyhow::anyhow!("{what}: writing {}: {e}", out.display()))?;
    let write_ms = t0.elapsed().as_secs_f64() * 1e3;
    let s = &built.stats;
    let mut rec = json!({
        "input": what,
        "ok": true,
        "artifact": out.display().to_string(),
        "bytes": bytes.len(),
        "raw_bytes": raw.len(),
        "zstd": args_zstd.is_some(),
        "without_vocabulary": args_zstd.is_some_and(|z| z.1),
        "compile_ms": (s.compile_ms * 10.0).round() / 10.0,
        "write_ms": (write_ms * 10.0).round() / 10.0,
        "peak_rss_mb": dwac_measure::peak_rss_mb().map(|m| (m * 10.0).round() / 10.0),
        "tokenizer": tokenizer.name(),
        "vocab_size": built.engine.vocab().len(),
        "terminals": s.terminals,
        "lexer_states": s.lexer_states,
        "lr_states": s.lr_states,
        "lr_conflicts": s.lr_conflicts,
        "warnings": built.warnings,
    });
    if let Some(k) = key {
        rec["cache_key"] = json!(k);
    }
    if let (Some(o), serde_json::Value::Object(m)) = (rec.as_object_mut(), mask_stats_json(s)) {
        o.extend(m);
    }
    // No silent cliffs: how fast the masks are, before a server finds out.
    if let Some(ms) = &s.mask {
        let engine = Arc::new(built.engine);
        let p = probe_masks(&engine, &ProbeOptions::default());
        rec["mask_probe"] = probe_json(&p);
        if let Some(w) = slow_mask_warning(&p, ms) {
            eprintln!("warning: {what}: {w}");
        }
    }
    Ok(rec)
}

fn probe_json(p: &MaskProbe) -> serde_json::Value {
    json!({
        "masks": p.masks,
        "p50_us": (p.p50_us * 100.0).round() / 100.0,
        "max_us": (p.max_us * 100.0).round() / 100.0,
        "slow_masks": p.slow_masks,
        "masks_with_undecided": p.masks_with_undecided,
        "worst_prefix": String::from_utf8_lossy(&p.worst_prefix),
        "worst_undecided_tokens_committed": p.worst_counters.undecided,
        "lexer_states_with_undecided": p.undecided_states,
        "worst_undecided_states": p.worst_undecided_states.iter().map(|&(q, n)| json!({"lexer_state": q, "tokens": n})).collect::<Vec<_>>(),
    })
}

/// Why this grammar's masks may be slow, if they may: UNDECIDED tokens (and what left them so)
/// or a mask over the probe's threshold.
fn slow_mask_warning(p: &MaskProbe, ms: &dwac_compile::dwa::MaskStats) -> Option<String> {
    let slow = p.max_us > ProbeOptions::default().slow_us;
    if ms.undecided_tokens == 0 && !slow {
        return None;
    }
    let mut w = String::from("masks may be slow:");
    if ms.undecided_tokens > 0 {
        let worst = p
            .worst_undecided_states
            .first()
            .map_or(String::new(), |(q, n)| format!(" (the most at lexer state {q}: {n} tokens)"));
        let lim = ms.undecided_by_walk_limits;
        let mut causes = Vec::new();
        if lim.lexings > 0 {
            causes.push(format!(
                "{} tokens below prefixes with more than {MAX_LEXINGS} lexings (character-level ambiguity)",
                lim.lexings
            ));
        }
        if lim.steps > 0 {
            causes.push(format!("{} tokens with lexings of more than {MAX_STEPS} lexemes", lim.steps));
        }
        if ms.lexer_states_over_budget > 0 {
            causes.push(format!(
                "{} lexer states over the determinizer's work budget (their tokens that backward saturation cannot \
                 decide: lexings with a priority guard or an ignored terminal, or past its budget)",
                ms.lexer_states_over_budget
            ));
        }
        if ms.lexer_states_cut > 0 {
            causes.push(format!(
                "{} lexer states over the determinizer's work budget with all their tokens, built without the tokens \
                 of longest lexings (those of them that backward saturation cannot decide are the UNDECIDED ones)",
                ms.lexer_states_cut
            ));
        }
        w += &format!(
            " {} (lexer state, token) pairs are UNDECIDED in {} lexer states{worst}, decided at run time by committing \
             each such token; cause: {}.",
            ms.undecided_tokens,
            p.undecided_states,
            causes.join("; ")
        );
    }
    let prefix: String =
        String::from_utf8_lossy(&p.worst_prefix).chars().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    w += &format!(
        " Probe: {} masks on random walks, p50 {:.1} µs, slowest {:.1} µs after {prefix:?} ({} UNDECIDED tokens committed \
         there){}.",
        p.masks,
        p.p50_us,
        p.max_us,
        p.worst_counters.undecided,
        if slow { format!(", {} masks over 1 ms", p.slow_masks) } else { String::new() }
    );
    Some(w)
}

pub(crate) fn compile(args: CompileArgs) -> Result<u8> {
    let sources: Vec<Source> = match &args.regex {
        Some(re) => vec![Source::Regex(re.clone())],
        None => args.inputs.iter().cloned().map(Source::File).collect(),
    };
    if sources.is_empty() {
        bail!("give one or more grammar files, or --regex PATTERN");
    }
    let outputs = output_paths(&args, &sources)?;
    let tokenizer = Arc::new(load_tokenizer(args.opts.tokenizer.as_deref())?);
    if sources.len() == 1 {
        let (bar, mut progress) = lexer_state_bar(args.json);
        let _watchdog =
            Watchdog::start(sources[0].display(), args.opts.max_seconds, args.opts.max_memory_mb, Some(bar.clone()));
        let zstd = args.zstd.then_some((args.zstd_level, args.without_vocabulary));
        let out = (outputs[0].as_path(), args.cache_dir.is_some());
        let rec = compile_one(&sources[0], out, zstd, &args.opts, &tokenizer, &mut progress);
        bar.finish_and_clear();
        print_compiled(&rec?, args.json);
        return Ok(0);
    }
    compile_batch(&args, sources, outputs, tokenizer)
}

/// Many inputs: `--jobs` workers take inputs from a queue; one progress bar. Each input's
/// allocations are charged to an account of its own (`dwac_measure::accounts`). An input over
/// its time budget, or whose account grows past `--max-memory-mb`, is asked to stop
/// (`dwac_compile::threads::Stop`: within milliseconds, wherever its compile is) and reported as
/// failed, and its worker goes on with the next input; a compile that has not stopped
/// [`STOP_GRACE`] later is left behind (it ends with the process) and a fresh worker takes its
/// place. The process as a whole stops (exit 2) only past what it held before the first input,
/// plus [`SHARED_CACHES_MB`], plus the budget times the workers that can run at once, plus one.
/// Exit 1 if any input failed.
pub(crate) fn compile_batch(
    args: &CompileArgs,
    sources: Vec<Source>,
    outputs: Vec<PathBuf>,
    tokenizer: Arc<Tokenizer>,
) -> Result<u8> {
    use std::sync::mpsc;
    use std::sync::Mutex;
    enum Event {
        Started(usize, Arc<Stop>, Option<Arc<Account>>),
        Done(usize, Result<serde_json::Value, String>),
    }
    let n = sources.len();
    let queue = Arc::new(Mutex::new((0..n).collect::<std::collections::VecDeque<usize>>()));
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get())).max(1);
    // What the process holds before any input (the tokenizer above all) and its caches shared
    // by every input (the vocabulary trie, lexer components, closure walks: bounded, well under
    // a gigabyte) are nobody's.
    let baseline = dwac_measure::current_rss_mb().unwrap_or(0.0).ceil() as u64 + SHARED_CACHES_MB;
    let ceiling = args.opts.max_memory_mb.saturating_mul(jobs.min(n) as u64 + 1).saturating_add(baseline);
    let _watchdog = Watchdog::start("batch compile".into(), f64::INFINITY, ceiling, None);
    let (tx, rx) = mpsc::channel::<Event>();
    let shared = Arc::new((
        sources,
        outputs,
        args.opts.clone(),
        args.zstd.then_some((args.zstd_level, args.without_vocabulary)),
    ));
    let spawn_worker = || {
        let (queue, tx, shared, tokenizer) = (queue.clone(), tx.clone(), shared.clone(), tokenizer.clone());
        let by_key = args.cache_dir.is_some();
        std::thread::spawn(move || loop {
            let Some(i) = queue.lock().ok().and_then(|mut q| q.pop_front()) else { return };
            let (sources, outputs, opts, zstd) = &*shared;
            let account = Account::open().map(Arc::new);
            let stop = Stop::new();
            if tx.send(Event::Started(i, Arc::clone(&stop), account.clone())).is_err() {
                return;
            }
            let _charged = account.as_ref().map(|a| a.enter());
            let mut within_budget = |_, _| memory_check(account.as_deref(), opts.max_memory_mb);
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let out = (outputs[i].as_path(), by_key);
                with_stop(&stop, || compile_one(&sources[i], out, *zstd, opts, &tokenizer, &mut within_budget))
            }));
            let res = match res {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(format!("{e:#}")),
                Err(p) => Err(format!("{}: internal error: {}", sources[i].display(), panic_message(&*p))),
            };
            if tx.send(Event::Done(i, res)).is_err() {
                return;
            }
        });
    };
    for _ in 0..jobs.min(n) {
        spawn_worker();
    }
    let bar = indicatif::ProgressBar::new(n as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("compiling {bar:40} {pos}/{len} inputs {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let t0 = Instant::now();
    let mut results: Vec<Option<Result<serde_json::Value, String>>> = (0..n).map(|_| None).collect();
    // (Per running input: when it started, its stop request and account, and when it was
    // asked to stop.)
    struct Running {
        since: Instant,
        stop: Arc<Stop>,
        account: Option<Arc<Account>>,
        stopped_at: Option<Instant>,
    }
    let mut running: std::collections::HashMap<usize, Running> = std::collections::HashMap::new();
    let mut done = 0;
    while done < n {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Event::Started(i, stop, account)) => {
                running.insert(i, Running { since: Instant::now(), stop, account, stopped_at: None });
            }
            Ok(Event::Done(i, r)) => {
                running.remove(&i);
                if results[i].is_none() {
                    results[i] = Some(r);
                    done += 1;
                    bar.inc(1);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for (&i, r) in running.iter_mut() {
            if r.stopped_at.is_some() {
                continue;
            }
            let why = if r.since.elapsed().as_secs_f64() > args.opts.max_seconds {
                format!(
                    "{}: compilation exceeded its time budget of {} s (--max-seconds)",
                    shared.0[i].display(),
                    args.opts.max_seconds
                )
            } else if let ControlFlow::Break(m) = memory_check(r.account.as_deref(), args.opts.max_memory_mb) {
                format!("{}: {m}", shared.0[i].display())
            } else {
                continue;
            };
            r.stop.stop(why.clone());
            r.stopped_at = Some(Instant::now());
            if results[i].is_none() {
                results[i] = Some(Err(why));
                done += 1;
                bar.inc(1);
            }
        }
        // (A compile that does not stop within the grace is left behind: a fresh worker goes on.)
        let stuck: Vec<usize> = running
            .iter()
            .filter(|(_, r)| r.stopped_at.is_some_and(|t| t.elapsed() > STOP_GRACE))
            .map(|(&i, _)| i)
            .collect();
        for i in stuck {
            running.remove(&i);
            spawn_worker();
        }
    }
    bar.finish_and_clear();
    let mut failed = 0;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Some(Ok(rec)) => print_compiled(&rec, args.json),
            Some(Err(e)) => {
                failed += 1;
                if args.json {
                    println!("{}", json!({"input": shared.0[i].display(), "ok": false, "error": e}));
                }
                eprintln!("error: {e}");
            }
            None => {
                failed += 1;
                eprintln!("error: {}: not compiled (a worker stopped)", shared.0[i].display());
            }
        }
    }
    eprintln!(
        "compiled {} of {n} inputs in {:.1} s with {jobs} jobs{}",
        n - failed,
        t0.elapsed().as_secs_f64(),
        if failed > 0 { format!("; {failed} failed") } else { String::new() }
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

/// How long a batch input asked to stop may take to do so before its worker is replaced.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Room for the process-wide caches in the batch's ceiling (MiB).
const SHARED_CACHES_MB: u64 = 1024;

/// Stop an input whose account has grown past `max_mb` MiB (none: no budget of its own).
fn memory_check(account: Option<&Account>, max_mb: u64) -> ControlFlow<String> {
    let Some(a) = account else { return ControlFlow::Continue(()) };
    let live_mb = a.live_bytes() as f64 / (1024.0 * 1024.0);
    if live_mb > max_mb as f64 {
        ControlFlow::Break(format!(
            "compilation exceeded its memory budget of {max_mb} MiB (--max-memory-mb): {live_mb:.0} MiB allocated \
             for this input"
        ))
    } else {
        ControlFlow::Continue(())
    }
}
