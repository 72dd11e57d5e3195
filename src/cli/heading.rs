//! Part of the binary (cli): the headings `run --help` groups its flags under, in the order
//! they are shown (the simulator's and the two other tools' spellings follow, in their own
//! structs). A leaf: every `*_args` file names its headings from here.

pub const TARGET: &str = "Target";
pub const ENDPOINT: &str = "Endpoints: tools, batches";
pub const LOAD: &str = "Load";
pub const WORKLOAD: &str = "Workload";
pub const STOP: &str = "Stop and warm-up";
pub const OUTPUT: &str = "Output";
pub const SERVER: &str = "Server metrics";
pub const OVERHEAD: &str = "Client overhead";
pub const TLS: &str = "TLS and auth";
pub const SIM: &str = "Simulator (no --url)";
pub const SHARDS: &str = "Shards (one run over several hosts)";
pub const SESSIONS: &str = "Users: conversations and abandoned answers";
