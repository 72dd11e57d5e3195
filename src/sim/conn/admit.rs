//! How a simulator connection goes through its replica's engine (`engine/`): enter at
//! arrival, wait (parked on the connection's timer until the engine fires it) or be refused,
//! run, and leave — always, through `Running`'s drop, whether the response ended or the
//! connection failed. It also keeps the replica's `/metrics` figures (`metrics.rs`) and the
//! truth of queue time and cached tokens. Like the rest of the connection code it may not
//! block the thread, and it holds no `RefCell` borrow across an await.

use super::*;
use crate::sim::engine::{Entered, Seat, State};

/// An admitted completion; leaving the engine is its drop.
pub(super) struct Running {
    shared: Rc<Shared>,
    seat: Rc<RefCell<Seat>>,
    /// It went through the engine (some part of the model is on); without, it never waits,
    /// is never refused, and leaving is a gauge's decrement.
    engine: bool,
    pub arrival_ns: u64,
    pub at_ns: u64,
    pub cached_tokens: Option<u32>,
    /// Prefill time of its uncached prompt tokens.
    pub prefill_ns: u64,
    /// Tokens sent so far.
    pub generated: u32,
    /// The response ended as it should (else it counts as aborted).
    pub done: bool,
    first_ns: Option<u64>,
    last_ns: u64,
}

impl Conn {
    /// Takes the request of `plan` (its body at `body` in the read buffer) through the
    /// engine. `None`: it was refused and the refusal already answered.
    pub(super) async fn admit(
        &mut self,
        plan: &Plan,
        arrival_ns: u64,
        close: bool,
    ) -> Result<Option<Running>, ConnEnd> {
        let shared = self.shared.clone();
        let seat = self.seat.clone();
        if !shared.settings.sim.engine_on() {
            // The model is off: the request runs at arrival, as it did before the engine
            // existed, and costs a few counters (the running gauge included).
            let m = &shared.stats.prom;
            bump(&m.running, 1);
            let mut run = Running::new(shared, seat, arrival_ns, false);
            run.started(arrival_ns, None, 0, plan.prompt_tokens);
            return Ok(Some(run));
        }
        let entered = {
            let mut engine = shared.engine.borrow_mut();
            let mut s = seat.borrow_mut();
            s.prompt_tokens = plan.prompt_tokens;
            s.max_tokens = plan.max_tokens;
            s.timer_fd = None;
            drop(s);
            let entered = engine.enter(&seat, arrival_ns);
            publish(&engine, &shared.stats);
            entered
        };
        if !matches!(entered, Entered::Running | Entered::Waiting) {
            self.refuse(entered, plan, close).await?;
            return Ok(None);
        }
        if shared.engine.borrow().caches() {
            shared.board.distinct.insert(seat.borrow().chain.whole());
        }
        // Built before the wait, so a connection that fails while waiting leaves the queue.
        let mut run = Running::new(shared, seat, arrival_ns, true);
        loop {
            let state = run.seat.borrow().state;
            match state {
                State::Running {
                    at_ns,
                    cached_tokens,
                } => {
                    let (cached, prefill_ns, prompt) = {
                        let engine = run.shared.engine.borrow();
                        let prompt = run.seat.borrow().prompt_tokens;
                        let cached = engine.caches().then_some(cached_tokens);
                        (cached, engine.prefill_ns(prompt - cached_tokens), prompt)
                    };
                    run.started(at_ns, cached, prefill_ns, prompt);
                    return Ok(Some(run));
                }
                _ => {
                    if self.shared.stopping.get() {
                        return Err(ConnEnd::Stopped);
                    }
                    let timer = self.timer()?;
                    run.seat.borrow_mut().timer_fd = Some(timer.raw_fd());
                    // Woken by the engine (`fire_now`) when admitted; the deadline only
                    // bounds how long a lost wake could cost.
                    timer.sleep_until(mono_ns() + 1_000_000_000).await?;
                }
            }
        }
    }
}

impl Conn {
    /// Answers a request the engine refused: 429 for a full queue, 400 for one that can
    /// never fit the cache.
    async fn refuse(&mut self, entered: Entered, plan: &Plan, close: bool) -> Result<(), ConnEnd> {
        match entered {
            Entered::Running | Entered::Waiting => Ok(()),
            Entered::QueueFull => {
                let msg = "the engine's waiting queue is full (--max-waiting); retry later";
                self.reply_error(Status::TooManyRequests, msg, close).await
            }
            Entered::TooLarge { blocks } => {
                let msg = format!(
                    "prompt ({} tokens) and max_tokens ({}) need {blocks} KV-cache blocks; the \
                     cache has {} (--kv-cache-blocks)",
                    plan.prompt_tokens,
                    plan.max_tokens,
                    self.shared.engine.borrow().kv_blocks().1
                );
                self.reply_error(Status::BadRequest, &msg, close).await
            }
        }
    }
}

impl Running {
    fn new(shared: Rc<Shared>, seat: Rc<RefCell<Seat>>, arrival_ns: u64, engine: bool) -> Self {
        Self {
            shared,
            seat,
            engine,
            arrival_ns,
            at_ns: arrival_ns,
            cached_tokens: None,
            prefill_ns: 0,
            generated: 0,
            done: false,
            first_ns: None,
            last_ns: 0,
        }
    }

    /// Admitted at `at_ns` with `cached` of its `prompt` tokens from the cache (`None`: no
    /// cache) and `prefill_ns` to compute the rest.
    fn started(&mut self, at_ns: u64, cached: Option<u32>, prefill_ns: u64, prompt: u32) {
        let shared = &self.shared;
        let cached_tokens = cached.unwrap_or(0);
        self.at_ns = at_ns;
        self.prefill_ns = prefill_ns;
        self.cached_tokens = cached;
        let (stats, m) = (&shared.stats, &shared.stats.prom);
        let queue_ns = at_ns.saturating_sub(self.arrival_ns);
        if self.engine {
            stats.queue.record(queue_ns);
        }
        bump(&stats.completions, 1);
        bump(&stats.prompt_tokens, prompt.into());
        bump(&stats.cached_tokens, cached_tokens.into());
        m.queue.observe(queue_ns);
        bump(&m.prompt_tokens, prompt.into());
        bump(&m.prefix_queries, prompt.into());
        bump(&m.prefix_hits, cached_tokens.into());
    }

    /// Tokens up to `generated` went out in a write that returned at `now_ns`.
    pub(super) fn wrote(&mut self, generated: u32, now_ns: u64) {
        let m = &self.shared.stats.prom;
        let fresh = generated.saturating_sub(self.generated);
        match self.first_ns {
            None if fresh > 0 => {
                self.first_ns = Some(now_ns);
                m.ttft.observe(now_ns.saturating_sub(self.arrival_ns));
                m.prefill.observe(now_ns.saturating_sub(self.at_ns));
            }
            Some(_) if fresh > 0 => {
                m.itl.observe(now_ns.saturating_sub(self.last_ns));
            }
            _ => {}
        }
        if fresh > 0 {
            self.last_ns = now_ns;
        }
        self.generated = generated;
    }

    /// The response's last byte went out at `now_ns`.
    pub(super) fn finished(&mut self, now_ns: u64) {
        let m = &self.shared.stats.prom;
        self.done = true;
        m.e2e.observe(now_ns.saturating_sub(self.arrival_ns));
        m.inference.observe(now_ns.saturating_sub(self.at_ns));
        m.decode
            .observe(now_ns.saturating_sub(self.first_ns.unwrap_or(now_ns)));
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let m = &self.shared.stats.prom;
        bump(&m.generation_tokens, self.generated.into());
        match self.done {
            true => bump(&m.finished_length, 1),
            false => bump(&m.finished_abort, 1),
        }
        if !self.engine {
            let running = m.running.load(std::sync::atomic::Ordering::Relaxed);
            m.running.store(
                running.saturating_sub(1),
                std::sync::atomic::Ordering::Relaxed,
            );
            return;
        }
        let mut engine = self.shared.engine.borrow_mut();
        engine.leave(&self.seat, self.generated, mono_ns());
        publish(&engine, &self.shared.stats);
    }
}

/// The replica's gauges and the engine's own counts, after an engine change.
fn publish(engine: &crate::sim::engine::Engine, stats: &ThreadStats) {
    let m = &stats.prom;
    let set =
        |a: &std::sync::atomic::AtomicU64, v: u64| a.store(v, std::sync::atomic::Ordering::Relaxed);
    let (used, total) = engine.kv_blocks();
    set(&m.running, engine.running().into());
    set(&m.waiting, engine.waiting() as u64);
    set(&m.kv_used_blocks, used.into());
    set(&m.kv_total_blocks, total.into());
    set(&m.kv_evictions, engine.evictions());
    set(&m.rejected, engine.queue_full);
    set(&stats.too_large, engine.too_large);
}
