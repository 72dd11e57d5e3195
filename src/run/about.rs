//! Part of the run (wiring): what the first server says about itself before anything is
//! timed, beside the model the requests name — its context window and its version (vLLM's
//! `/v1/models` and `/version`, llama.cpp's `/props`; asked beyond the model's listing only
//! for conversations, which need the window) — and the conversations' cap that it sets. Blocking and best effort: a server that does not say leaves the field `null`
//! and never fails the run. Never prints.

use super::endpoint::{self, Endpoints};
use crate::plan::Plan;
use crate::summary::served::{from, Served};
use serde_json::Value;

/// What the first server says about itself. `listing` is `/v1/models`' answer when the model
/// was asked of it; with a model given, the listing is asked again only where its window
/// matters (conversations, whose prompts grow).
pub(super) fn served(
    eps: &Endpoints,
    plan: &Plan,
    model: String,
    listing: Option<Value>,
) -> Served {
    let ep = &eps.list[0];
    let ask = |path: &str| endpoint::get_json(ep, plan, path);
    let model_from = match listing {
        Some(_) => from::MODELS,
        None => from::PLAN,
    };
    // Conversations need the window: only their runs ask beyond the model's listing (other
    // runs send the server nothing but their own requests, and the model's discovery).
    let conversations = plan.sessions.is_some();
    let listing = listing.or_else(|| conversations.then(|| ask("/v1/models")).flatten());
    let mut s = Served {
        max_model_len: listing.as_ref().and_then(|v| window_of(v, &model)),
        model,
        model_from: model_from.into(),
        ..Served::default()
    };
    s.max_model_len_from = s.max_model_len.map(|_| from::MODELS.into());
    if !conversations {
        return s;
    }
    if let Some(v) = ask("/version").and_then(|v| Some(v["version"].as_str()?.to_string())) {
        (s.version, s.version_from) = (Some(v), Some(from::VERSION.into()));
    } else if let Some(props) = ask("/props") {
        if let Some(b) = props["build_info"].as_str() {
            (s.version, s.version_from) = (Some(b.to_string()), Some(from::PROPS.into()));
        }
        let n_ctx = props["default_generation_settings"]["n_ctx"].as_u64();
        if let (None, Some(n)) = (s.max_model_len, n_ctx.filter(|&n| n > 0)) {
            (s.max_model_len, s.max_model_len_from) = (Some(n), Some(from::PROPS.into()));
        }
    }
    s
}

/// vLLM's `max_model_len` of `model` in a `/v1/models` listing (else of its first model).
fn window_of(listing: &Value, model: &str) -> Option<u64> {
    let data = listing["data"].as_array()?;
    let card = (data.iter().find(|c| c["id"] == model)).or(data.first())?;
    card["max_model_len"].as_u64().filter(|&n| n > 0)
}

/// The context window the workers end conversations by: the server's, for a run of
/// conversations against a server that told it (marked in `served`); `None` otherwise.
pub(super) fn session_cap(plan: &Plan, served: &mut Served) -> Option<u32> {
    let window = served.max_model_len.filter(|_| plan.sessions.is_some())?;
    served.sessions_capped = true;
    Some(u32::try_from(window).unwrap_or(u32::MAX))
}

/// The warning a capped run carries.
pub(super) fn cap_warning(served: &Served) -> Option<String> {
    let window = served.max_model_len.filter(|_| served.sessions_capped)?;
    Some(format!(
        "conversations were capped to the server's context window ({window} tokens, from {}): \
         a session whose next prompt plus its max_tokens would not fit ended there (counted \
         in sessions' `context` ends) instead of being refused by the server; \
         --max-context-tokens sets a budget of your own",
        served.max_model_len_from.as_deref().unwrap_or("the server")
    ))
}

#[cfg(test)]
mod tests {
    use super::window_of;
    use serde_json::json;

    #[test]
    fn the_window_is_the_named_models_else_the_first() {
        let listing = json!({"data": [
            {"id": "a", "max_model_len": 2048},
            {"id": "b", "max_model_len": 4096},
            {"id": "c"}
        ]});
        assert_eq!(window_of(&listing, "b"), Some(4096));
        assert_eq!(window_of(&listing, "zzz"), Some(2048));
        assert_eq!(window_of(&listing, "c"), None);
        assert_eq!(window_of(&json!({"data": []}), "a"), None);
        assert_eq!(
            window_of(&json!({"data": [{"id": "a", "max_model_len": 0}]}), "a"),
            None
        );
    }
}
