//! `dwac tools`: print the structural tag of an assistant turn with tools.

use anyhow::{Context, Result};

use crate::args::ToolsArgs;
use crate::load::{tools_tag, ToolsSpec};

pub(crate) fn tools(a: ToolsArgs) -> Result<u8> {
    let what = a.input.display().to_string();
    let text = std::fs::read_to_string(&a.input).with_context(|| what.clone())?;
    let spec = ToolsSpec {
        format: &a.format,
        tool_choice: a.tool_choice.as_deref(),
        parallel_tool_calls: a.parallel_tool_calls,
        reasoning: a.reasoning,
        max_whitespace: a.max_whitespace,
    };
    let tag = tools_tag(&text, &spec).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    println!("{}", serde_json::to_string_pretty(&tag)?);
    Ok(0)
}
