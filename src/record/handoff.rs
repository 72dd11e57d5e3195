//! Part of stage 6 (… → **record** → collector): how records travel from a worker to the
//! collector, and their buffers back. Each worker has its own pair of bounded single-producer
//! single-consumer rings (`rtrb`): records out, emptied buffers (`Spare`) back to the worker
//! they came from. Nothing in them is shared with another worker, and a batch of records
//! costs the worker one store of the ring's tail (and a load of its head), however many
//! records it holds.
//!
//! Bounded both ways: a full record ring keeps the records with the worker (which counts
//! them and, past its own bound, waits: see `worker::Ctx::emit`), never drops one; a full
//! spare ring drops the buffers (the worker allocates new ones, counted as
//! `event_vecs_allocated`). Never prints, never allocates once the collector's scratch list
//! has grown.

use super::{Record, Spare};
use rtrb::{Consumer, Producer, RingBuffer};
use std::collections::VecDeque;

/// The worker's end of its link to the collector.
pub struct WorkerLink {
    records: Producer<Record>,
    spares: Consumer<Spare>,
}

/// The collector's end of one worker's link.
pub struct CollectorLink {
    records: Consumer<Record>,
    spares: Producer<Spare>,
    /// Spares of the batch being taken, sent back together.
    back: Vec<Spare>,
}

/// One worker's link: room for `records` records on their way out and `spares` buffers on
/// their way back.
pub fn link(records: usize, spares: usize) -> (WorkerLink, CollectorLink) {
    let (rec_tx, rec_rx) = RingBuffer::new(records);
    let (spare_tx, spare_rx) = RingBuffer::new(spares);
    (
        WorkerLink {
            records: rec_tx,
            spares: spare_rx,
        },
        CollectorLink {
            records: rec_rx,
            spares: spare_tx,
            back: Vec::new(),
        },
    )
}

impl WorkerLink {
    /// Moves the oldest records of `pending` into the ring, as many as it has room for, in
    /// one batch; returns how many moved.
    pub fn push_from(&mut self, pending: &mut VecDeque<Record>) -> usize {
        let n = self.records.slots().min(pending.len());
        if n == 0 {
            return 0;
        }
        match self.records.write_chunk_uninit(n) {
            Ok(chunk) => chunk.fill_from_iter(pending.drain(..n)),
            Err(_) => 0,
        }
    }

    /// Moves every record of `pending` into the ring, waiting for the collector to make room
    /// (the end of the run, or a collector far behind). Returns early only when the
    /// collector is gone (then nobody could take them).
    pub fn push_all_waiting(&mut self, pending: &mut VecDeque<Record>) {
        while !pending.is_empty() {
            if self.push_from(pending) == 0 {
                if self.records.is_abandoned() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }

    /// How many buffers the spare ring holds at most.
    pub fn spare_capacity(&self) -> usize {
        self.spares.buffer().capacity()
    }

    /// Moves the buffers the collector sent back into `free`; returns how many.
    pub fn take_spares(&mut self, free: &mut Vec<Spare>) -> usize {
        let n = self.spares.slots();
        match self.spares.read_chunk(n) {
            Ok(chunk) => {
                free.extend(chunk);
                n
            }
            Err(_) => 0,
        }
    }
}

impl CollectorLink {
    /// Takes every record waiting now, hands each to `each`, and sends its emptied buffers
    /// back to its worker (dropped when that ring is full). Returns how many it took.
    pub fn drain(&mut self, mut each: impl FnMut(&mut Record)) -> usize {
        let n = self.records.slots();
        let Ok(chunk) = self.records.read_chunk(n) else {
            return 0;
        };
        for mut rec in chunk {
            each(&mut rec);
            self.back.push(rec.take_spare());
        }
        let room = self.spares.slots().min(self.back.len());
        if let Ok(chunk) = self.spares.write_chunk_uninit(room) {
            chunk.fill_from_iter(self.back.drain(..room));
        }
        // What did not fit is freed here.
        self.back.clear();
        n
    }

    /// The worker has hung up: what is in the ring now is all it will ever send.
    pub fn is_hung_up(&self) -> bool {
        self.records.is_abandoned()
    }

    /// No record waits in the ring.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u64) -> Record {
        Record {
            id,
            events: Vec::with_capacity(4),
            ..Default::default()
        }
    }

    #[test]
    fn records_go_in_order_in_batches_and_a_full_ring_keeps_the_rest_with_the_worker() {
        let (mut w, mut c) = link(4, 8);
        let mut pending: VecDeque<Record> = (0..6).map(rec).collect();
        assert_eq!(w.push_from(&mut pending), 4);
        assert_eq!(pending.len(), 2, "two wait with the worker, none dropped");
        assert_eq!(w.push_from(&mut pending), 0, "the ring is full");
        let mut ids = vec![];
        assert_eq!(c.drain(|r| ids.push(r.id)), 4);
        assert_eq!(w.push_from(&mut pending), 2);
        assert_eq!(c.drain(|r| ids.push(r.id)), 2);
        assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
        assert!(!c.is_hung_up(), "the worker has not hung up");
        drop(w);
        assert!(c.is_hung_up() && c.is_empty());
    }

    #[test]
    fn buffers_come_back_emptied_to_their_worker_and_a_full_spare_ring_drops_them() {
        let (mut w, mut c) = link(8, 2);
        let mut pending: VecDeque<Record> = (0..3).map(rec).collect();
        pending[0].events.push(Default::default());
        pending[0].text.extend_from_slice(b"abc");
        w.push_from(&mut pending);
        assert_eq!(c.drain(|_| {}), 3);
        let mut free = vec![];
        assert_eq!(w.take_spares(&mut free), 2, "the spare ring holds two");
        assert!(free
            .iter()
            .all(|s| s.events.is_empty() && s.text.is_empty()));
        assert!(
            free.iter().all(|s| s.events.capacity() >= 4),
            "capacity kept"
        );
        assert_eq!(w.take_spares(&mut free), 0);
    }

    #[test]
    fn waiting_for_room_ends_when_the_collector_takes_them_or_is_gone() {
        let (mut w, mut c) = link(2, 2);
        let taker = std::thread::spawn(move || {
            let mut ids = vec![];
            while ids.len() < 5 {
                c.drain(|r| ids.push(r.id));
            }
            ids
        });
        let mut pending: VecDeque<Record> = (0..5).map(rec).collect();
        w.push_all_waiting(&mut pending);
        assert_eq!(taker.join().unwrap(), [0, 1, 2, 3, 4]);
        // The collector is gone (its end dropped): waiting returns instead of hanging.
        let mut more: VecDeque<Record> = (0..3).map(rec).collect();
        w.push_all_waiting(&mut more);
        assert!(!more.is_empty());
    }
}
