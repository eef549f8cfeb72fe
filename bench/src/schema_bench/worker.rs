//! The worker (`dwac-bench schema-worker`): compiles each job's schema, answers as soon as the
//! compile ends, then judges the instance texts (see the parent module for the protocol).

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_grammar::schema::{compile_schema, SchemaOptions};
use dwac_runtime::unstable::artifact::grammar_tables_len;
use dwac_runtime::{Matcher, Vocabulary};
use serde_json::{json, Value};

use crate::util::{catch, tokenizer_file, Silenced};

fn load_vocab(tokenizer: &str) -> Result<Vocabulary> {
    if tokenizer == "bytes" {
        return Ok(crate::schema_suite::byte_vocab());
    }
    let path = tokenizer_file(tokenizer);
    let tok = dwac_vocab::Tokenizer::from_file(&path).with_context(|| format!("loading {}", path.display()))?;
    Ok(tok.into_vocab())
}

fn worker_job(job: &Value, vocab: &Vocabulary, out: &mut impl Write) -> Result<()> {
    let id = job["id"].clone();
    let schema = &job["schema"];
    let vocab = vocab.clone();
    let t0 = Instant::now();
    let compiled = catch(|| {
        let sg = compile_schema(schema, &SchemaOptions::default())
            .map_err(|e| json!({"keyword": e.keyword, "pointer": e.pointer, "message": e.message}))?;
        let (engine, _) = dwac_compile::compile_engine(&sg.grammar, vocab)
            .map_err(|e| json!({"keyword": "<engine>", "pointer": "", "message": e.to_string()}))?;
        Ok::<_, Value>((Arc::new(engine), sg.warnings.len()))
    });
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    writeln!(out, "{}", json!({"id": id, "event": "compiled"}))?;
    out.flush()?;
    let r = match compiled {
        Err(p) => {
            json!({"id": id, "compiled": false, "panic": p, "compile_ms": compile_ms, "error": null, "accepted": []})
        }
        Ok(Err(e)) => json!({"id": id, "compiled": false, "error": e, "compile_ms": compile_ms, "accepted": []}),
        Ok(Ok((engine, warnings))) => {
            let t1 = Instant::now();
            let mut panic = Value::Null;
            let accepted: Vec<bool> = job["instances"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    let text = t.as_str().unwrap_or("");
                    catch(|| {
                        let mut m = Matcher::new(Arc::clone(&engine));
                        m.commit_bytes(text.as_bytes()).is_ok() && m.is_accepting()
                    })
                    .unwrap_or_else(|p| {
                        panic = json!(format!("judging panicked: {p}"));
                        false
                    })
                })
                .collect();
            json!({"id": id, "compiled": true, "error": null, "panic": panic, "compile_ms": compile_ms,
                   "judge_ms": t1.elapsed().as_secs_f64() * 1e3,
                   "tables_bytes": grammar_tables_len(engine.tables()), "warnings": warnings, "accepted": accepted})
        }
    };
    writeln!(out, "{r}")?;
    out.flush()?;
    Ok(())
}

pub fn worker(tokenizer: &str) -> Result<()> {
    let _silence = Silenced::install();
    let vocab = load_vocab(tokenizer)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    writeln!(out, "{}", json!({"event": "ready"}))?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let job: Value = serde_json::from_str(&line).context("bad job line")?;
        worker_job(&job, &vocab, &mut out)?;
    }
    Ok(())
}
