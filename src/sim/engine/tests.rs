//! The scheduler against arithmetic: slots, FIFO order, the queue bound, blocks, hits.

use super::*;

fn settings(seqs: u32, waiting: u32, blocks: u32, block_size: u32) -> SimSettings {
    SimSettings {
        max_num_seqs: seqs,
        max_waiting: waiting,
        kv_cache_blocks: blocks,
        block_size,
        ..SimSettings::default()
    }
}

fn seat(words: &str, max_tokens: u32, block_size: u32) -> Rc<RefCell<Seat>> {
    let mut s = Seat::new(block_size, 1 << 16);
    s.chain.push_text(words.as_bytes());
    s.prompt_tokens = s.chain.tokens as u32;
    s.max_tokens = max_tokens;
    Rc::new(RefCell::new(s))
}

fn state(s: &Rc<RefCell<Seat>>) -> State {
    s.borrow().state
}

#[test]
fn slots_then_a_fifo_queue_then_429() {
    let mut e = Engine::new(&settings(2, 2, 0, 16));
    let seats: Vec<_> = (0..5).map(|i| seat(&format!("p{i}"), 4, 16)).collect();
    let got: Vec<_> = seats.iter().map(|s| e.enter(s, 10)).collect();
    use Entered::*;
    assert_eq!(got, [Running, Running, Waiting, Waiting, QueueFull]);
    assert_eq!((e.running(), e.waiting(), e.queue_full), (2, 2, 1));
    // The first to leave lets the first waiting one in, admitted at the leave time.
    e.leave(&seats[1], 4, 50);
    assert_eq!(
        state(&seats[2]),
        State::Running {
            at_ns: 50,
            cached_tokens: 0
        }
    );
    assert_eq!(state(&seats[3]), State::Waiting);
    // A waiting request whose connection goes away leaves the queue.
    e.leave(&seats[3], 0, 60);
    assert_eq!((e.running(), e.waiting()), (2, 0));
    e.leave(&seats[0], 4, 70);
    e.leave(&seats[2], 4, 80);
    assert_eq!((e.running(), e.waiting()), (0, 0));
    // Leaving twice (a failed connection after its response ended) changes nothing.
    e.leave(&seats[2], 4, 90);
    assert_eq!(e.running(), 0);
}

#[test]
fn a_repeated_prompt_hits_its_full_blocks_but_never_its_last_token() {
    let mut e = Engine::new(&settings(0, 0, 64, 4));
    let words = "a b c d e f g h i j"; // 10 tokens: 2 full blocks
    let first = seat(words, 2, 4);
    assert_eq!(e.enter(&first, 0), Entered::Running);
    assert_eq!(
        state(&first),
        State::Running {
            at_ns: 0,
            cached_tokens: 0
        }
    );
    e.leave(&first, 2, 5);
    let again = seat(words, 2, 4);
    e.enter(&again, 10);
    assert_eq!(
        state(&again),
        State::Running {
            at_ns: 10,
            cached_tokens: 8
        }
    );
    e.leave(&again, 2, 15);
    // 8 tokens exactly: both blocks cached, but the last token is computed, so one hit.
    let eight = seat("a b c d e f g h", 1, 4);
    e.enter(&eight, 20);
    assert_eq!(
        state(&eight),
        State::Running {
            at_ns: 20,
            cached_tokens: 4
        }
    );
    e.leave(&eight, 1, 25);
    // Another prompt sharing one block hits one block.
    let other = seat("a b c d X f g h i j", 2, 4);
    e.enter(&other, 30);
    assert_eq!(
        state(&other),
        State::Running {
            at_ns: 30,
            cached_tokens: 4
        }
    );
    e.leave(&other, 2, 35);
    // The reply's full blocks were cached: prompt + reply + more hits prompt and reply.
    let mut turn2 = String::from(words);
    for i in 0..2 {
        turn2.push(' ');
        turn2.push_str(std::str::from_utf8(crate::sim::api::word(i)).unwrap());
    }
    turn2.push_str(" next question here");
    let next = seat(&turn2, 2, 4);
    e.enter(&next, 40);
    assert_eq!(
        state(&next),
        State::Running {
            at_ns: 40,
            cached_tokens: 12
        }
    );
}

#[test]
fn admission_waits_for_blocks_and_refuses_what_can_never_fit() {
    // 6 blocks of 4: a request of 8 prompt + 8 output tokens needs 4.
    let mut e = Engine::new(&settings(0, 0, 6, 4));
    let a = seat("a1 a2 a3 a4 a5 a6 a7 a8", 8, 4);
    let b = seat("b1 b2 b3 b4 b5 b6 b7 b8", 8, 4);
    assert_eq!(e.enter(&a, 0), Entered::Running);
    assert_eq!(e.enter(&b, 1), Entered::Waiting, "2 blocks free, 4 needed");
    assert_eq!(e.kv_blocks(), (4, 6));
    e.leave(&a, 8, 100);
    assert_eq!(
        state(&b),
        State::Running {
            at_ns: 100,
            cached_tokens: 0
        }
    );
    assert_eq!(e.kv_blocks(), (4, 6));
    // b evicted a's idle cached blocks to get room: counted.
    assert!(e.evictions() >= 2, "{}", e.evictions());
    let huge = seat("x", 24, 4);
    assert_eq!(e.enter(&huge, 2), Entered::TooLarge { blocks: 7 });
    assert_eq!(e.too_large, 1);
    e.leave(&b, 8, 200);
    assert_eq!(e.kv_blocks(), (0, 6));
}

#[test]
fn prefill_costs_the_uncached_tokens_and_is_bounded() {
    let s = SimSettings {
        prefill_overhead_ms: 2.0,
        prefill_ms_per_token: 0.5,
        ..SimSettings::default()
    };
    let e = Engine::new(&s);
    assert_eq!(e.prefill_ns(0), 2_000_000);
    assert_eq!(e.prefill_ns(10), 7_000_000);
    assert_eq!(e.prefill_ns(u32::MAX), (MAX_DELAY_MS * 1e6) as u64);
}
