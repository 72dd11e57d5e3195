//! Part of the `Plan` (a leaf: it imports nothing of the crate): what an endpoint other than
//! plain chat is asked beside the prompt — the tools a model may call (`--tools`,
//! `--tool-choice`), how many inputs a pooling request carries (`--batch-size`) and how its
//! vectors come back (`--encoding-format`). Read once, before the run, by the catalog that
//! serializes every request; never on the hot path.

use serde::{Deserialize, Serialize};

/// Inputs per pooling request at most (`--batch-size`): a batch is one request's body, built
/// before the run, and a large one is megabytes.
pub const MAX_BATCH_SIZE: u32 = 4096;

/// Tools a model may call, as the user gave them (`--tools FILE`), each reduced to what every
/// API's shape is made of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The function's name.
    pub name: String,
    /// Its description; `None`: not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments' JSON Schema (OpenAI's `parameters`, Anthropic's `input_schema`).
    pub parameters: serde_json::Value,
}

/// `--tool-choice`: whether, and which, tool the model must call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (`auto`).
    Auto,
    /// The model must call some tool (`required`; Anthropic's `any`).
    Required,
    /// The model may not call a tool (`none`).
    None,
    /// The model must call this one.
    Named(String),
}

/// How a pooling answer's vectors come back (`--encoding-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum EncodingFormat {
    /// JSON arrays of numbers (the default).
    #[default]
    Float,
    /// Base64 of little-endian float32 bytes: a quarter of the bytes of the text floats.
    Base64,
}

impl EncodingFormat {
    /// The body's `encoding_format` value.
    pub fn name(self) -> &'static str {
        match self {
            EncodingFormat::Float => "float",
            EncodingFormat::Base64 => "base64",
        }
    }
}

/// What the endpoint is asked beside the prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApiOptions {
    /// Tools offered on every request (`--tools FILE`); empty: none.
    pub tools: Vec<Tool>,
    /// `--tool-choice`; `None`: not sent (the server's default, `auto` when tools are given).
    pub tool_choice: Option<ToolChoice>,
    /// Inputs per embeddings request, documents per rerank query, pairs per score request
    /// (`--batch-size`).
    pub batch_size: u32,
    /// Embeddings' `encoding_format` (`--encoding-format`).
    pub encoding_format: EncodingFormat,
}

impl Default for ApiOptions {
    fn default() -> Self {
        ApiOptions {
            tools: vec![],
            tool_choice: None,
            batch_size: 1,
            encoding_format: EncodingFormat::Float,
        }
    }
}

/// Why a `--tools` file cannot be used; the message names the flag and the fix.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--tools: {0}")]
pub struct ToolsError(pub String);

/// The tools of a `--tools` file's JSON: an array (or `{"tools": [...]}`) of OpenAI chat tools
/// (`{"type":"function","function":{"name",..,"parameters"}}`), Responses' flat ones
/// (`{"type":"function","name",..,"parameters"}`) or Anthropic's (`{"name",..,"input_schema"}`).
pub fn parse_tools(json: &serde_json::Value) -> Result<Vec<Tool>, ToolsError> {
    let list = match json {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => match o.get("tools") {
            Some(serde_json::Value::Array(a)) => a,
            _ => {
                return Err(ToolsError(
                    "expected a JSON array of tools (or an object whose \"tools\" is one)".into(),
                ))
            }
        },
        _ => return Err(ToolsError("expected a JSON array of tools".into())),
    };
    if list.is_empty() {
        return Err(ToolsError(
            "the array is empty: give at least one tool, or leave --tools out".into(),
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let f = t.get("function").unwrap_or(t);
            let name = f.get("name").and_then(|n| n.as_str()).ok_or_else(|| {
                ToolsError(format!(
                    "tool {i} has no \"name\" (OpenAI's shape: {{\"type\":\"function\",\
                     \"function\":{{\"name\":..,\"parameters\":{{..}}}}}}; Anthropic's: \
                     {{\"name\":..,\"input_schema\":{{..}}}})"
                ))
            })?;
            let parameters = f
                .get("parameters")
                .or_else(|| f.get("input_schema"))
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
            if !parameters.is_object() {
                return Err(ToolsError(format!(
                    "tool '{name}': its parameters (input_schema) must be a JSON Schema object"
                )));
            }
            Ok(Tool {
                name: name.to_string(),
                description: f
                    .get("description")
                    .and_then(|d| d.as_str())
                    .map(str::to_string),
                parameters,
            })
        })
        .collect()
}

/// `--tool-choice auto|required|none|NAME` (Anthropic's `any` is `required`).
pub fn parse_tool_choice(s: &str) -> ToolChoice {
    match s.trim() {
        "auto" => ToolChoice::Auto,
        "required" | "any" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Named(name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_shape_of_tools_reads_as_the_same_tool() {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let openai = json!([{"type": "function", "function": {"name": "weather",
            "description": "d", "parameters": schema}}]);
        let flat = json!({"tools": [{"type": "function", "name": "weather", "description": "d",
            "parameters": schema}]});
        let anthropic = json!([{"name": "weather", "description": "d", "input_schema": schema}]);
        let want = vec![Tool {
            name: "weather".into(),
            description: Some("d".into()),
            parameters: schema.clone(),
        }];
        for j in [openai, flat, anthropic] {
            assert_eq!(parse_tools(&j).unwrap(), want, "{j}");
        }
        let bare = parse_tools(&json!([{"name": "f"}])).unwrap();
        assert_eq!(bare[0].parameters["type"], "object");
    }

    #[test]
    fn bad_tools_say_what_is_wrong() {
        for (j, says) in [
            (json!([]), "empty"),
            (json!(3), "array"),
            (json!([{"type": "function"}]), "no \"name\""),
            (json!([{"name": "f", "parameters": 1}]), "JSON Schema"),
        ] {
            let e = parse_tools(&j).unwrap_err().to_string();
            assert!(e.starts_with("--tools: ") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn tool_choice_names() {
        assert_eq!(parse_tool_choice("auto"), ToolChoice::Auto);
        assert_eq!(parse_tool_choice("any"), ToolChoice::Required);
        assert_eq!(parse_tool_choice("required"), ToolChoice::Required);
        assert_eq!(parse_tool_choice("none"), ToolChoice::None);
        assert_eq!(
            parse_tool_choice("lookup"),
            ToolChoice::Named("lookup".into())
        );
    }
}
