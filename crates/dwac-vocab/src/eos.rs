//! End-of-sequence ids (rule: [`crate::Tokenizer::from_parts`]).

use serde_json::Value;

use crate::bytes::Table;
use crate::{SideFiles, VocabError};

/// Contents of special added tokens taken as end tokens when no side file names one.
pub const WELL_KNOWN_EOS: &[&str] = &[
    "<|endoftext|>",
    "</s>",
    "<|im_end|>",
    "<｜end▁of▁sentence｜>",
    "<|end|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "<end_of_turn>",
    "<eos>",
    "<|eos|>",
];

fn parse(file: &str, bytes: Option<&[u8]>) -> Result<Option<Value>, VocabError> {
    match bytes {
        None => Ok(None),
        Some(b) => serde_json::from_slice(b).map(Some).map_err(|source| VocabError::Json { what: file.into(), source }),
    }
}

/// `"eos_token"` as a string or `{"content": ...}`; `null`/absent → `None`.
fn eos_content<'a>(file: &str, cfg: &'a Value) -> Result<Option<&'a str>, VocabError> {
    match cfg.get("eos_token") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v @ Value::Object(_)) => match v.get("content") {
            Some(Value::String(s)) => Ok(Some(s)),
            _ => Err(VocabError::Malformed {
                what: file.into(),
                detail: "\"eos_token\" object has no string \"content\"".into(),
            }),
        },
        Some(_) => Err(VocabError::Malformed {
            what: file.into(),
            detail: "\"eos_token\" is neither a string nor an object".into(),
        }),
    }
}

pub(crate) fn resolve(table: &Table, side: SideFiles<'_>) -> Result<Vec<u32>, VocabError> {
    let size = table.bytes.len();
    let mut eos = Vec::new();
    for (file, bytes) in
        [("tokenizer_config.json", side.tokenizer_config), ("special_tokens_map.json", side.special_tokens_map)]
    {
        if let Some(cfg) = parse(file, bytes)? {
            if let Some(content) = eos_content(file, &cfg)? {
                let id = table
                    .lookup(content)
                    .ok_or_else(|| VocabError::EosNotFound { file: file.into(), content: content.into() })?;
                eos.push(id);
            }
        }
    }
    let file = "generation_config.json";
    if let Some(cfg) = parse(file, side.generation_config)? {
        let ids: Vec<&Value> = match cfg.get("eos_token_id") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list.iter().collect(),
            Some(v) => vec![v],
        };
        for v in ids {
            let id = v.as_u64().ok_or_else(|| VocabError::Malformed {
                what: file.into(),
                detail: format!("\"eos_token_id\" entry {v} is not a non-negative integer"),
            })?;
            if id >= size as u64 {
                return Err(VocabError::EosOutOfRange { file: file.into(), id, size });
            }
            eos.push(id as u32);
        }
    }
    if eos.is_empty() {
        for a in &table.added {
            if table.special[a.id as usize] && WELL_KNOWN_EOS.contains(&a.content.as_str()) {
                eos.push(a.id);
            }
        }
    }
    if eos.is_empty() {
        return Err(VocabError::NoEos);
    }
    eos.sort_unstable();
    eos.dedup();
    Ok(eos)
}
