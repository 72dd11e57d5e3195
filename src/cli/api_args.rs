//! Part of the CLI (raw flags → `Plan`): `ringbench run`'s flags of what an endpoint other
//! than plain chat is asked — tools (`--tools`, `--tool-choice`), inputs per pooling request
//! (`--batch-size`) and the vectors' encoding (`--encoding-format`) — read into
//! `plan::ApiOptions`. It reads the `--tools` file, once, before the run; rules between
//! settings (tools need an endpoint that takes them) are `Plan::validate`'s.

use super::heading as h;
use super::{usage, UsageError};
use clap::Args;
use ringbench::plan::api::{parse_tool_choice, parse_tools, MAX_BATCH_SIZE};
use ringbench::plan::{ApiOptions, EncodingFormat};
use std::path::PathBuf;

#[derive(Debug, Clone, Default, Args)]
pub struct ApiFlags {
    /// Inputs per pooling request (rerank: documents) [default: 1]
    ///
    /// For score, text_2 entries per request. At most 4096.
    #[arg(long, alias = "batch-size-text", value_name = "N", help_heading = h::ENDPOINT)]
    pub batch_size: Option<u32>,
    /// Embeddings' encoding_format: float or base64 [default: float]
    #[arg(long, value_name = "FORMAT", hide_possible_values = true, help_heading = h::ENDPOINT)]
    pub encoding_format: Option<EncodingFormat>,
    /// A JSON file of tools offered on every request (OpenAI's array)
    ///
    /// Anthropic's shape (input_schema) and Responses' flat one are read too; each endpoint
    /// gets them in its own shape.
    #[arg(long, value_name = "FILE", help_heading = h::ENDPOINT)]
    pub tools: Option<PathBuf>,
    /// auto, required, none, or a tool's name [default: not sent]
    #[arg(long, value_name = "CHOICE", help_heading = h::ENDPOINT)]
    pub tool_choice: Option<String>,
}

impl ApiFlags {
    /// The flags as the plan's `ApiOptions`, the tools file read.
    pub fn options(&self) -> Result<ApiOptions, UsageError> {
        let batch_size = self.batch_size.unwrap_or(1);
        if !(1..=MAX_BATCH_SIZE).contains(&batch_size) {
            return usage(format!(
                "--batch-size {batch_size}: give 1 to {MAX_BATCH_SIZE} inputs per request"
            ));
        }
        let tools = match &self.tools {
            None => vec![],
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    UsageError(format!("--tools {}: cannot read it: {e}", path.display()))
                })?;
                let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                    UsageError(format!(
                        "--tools {}: not JSON ({e}); give a JSON array of tools",
                        path.display()
                    ))
                })?;
                parse_tools(&json)
                    .map_err(|e| UsageError(format!("{e} (in {})", path.display())))?
            }
        };
        let tool_choice = self.tool_choice.as_deref().map(parse_tool_choice);
        if let Some(ringbench::plan::ToolChoice::Named(name)) = &tool_choice {
            if !tools.iter().any(|t| &t.name == name) {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                return usage(format!(
                    "--tool-choice {name}: not auto, required or none, and no tool of --tools \
                     has that name (its tools: {})",
                    if names.is_empty() {
                        "none given".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            }
        }
        Ok(ApiOptions {
            tools,
            tool_choice,
            batch_size,
            encoding_format: self.encoding_format.unwrap_or_default(),
        })
    }
}
