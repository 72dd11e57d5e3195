//! Part of the runtime underneath client and simulator: CPUs — which ones this process may use,
//! the one rule that picks defaults for workers and the simulator, and pinning a thread for a
//! while. Never prints.

/// The CPUs this process may run on, lowest first (`[0]` when they cannot be read).
pub fn online_cpus() -> Vec<usize> {
    match core_affinity::get_core_ids() {
        Some(ids) if !ids.is_empty() => ids.into_iter().map(|c| c.id).collect(),
        _ => vec![0],
    }
}

/// The workers' CPUs when none are given: the first CPU this process may use (one worker).
pub fn default_worker_cpus(online: &[usize]) -> Vec<usize> {
    vec![online.first().copied().unwrap_or(0)]
}

/// `--cpus auto`: every CPU this process may run on (`online`, its affinity mask, which a
/// container's cpuset narrows: a Kubernetes pod pinned by the static CPU manager gets exactly
/// its CPUs), one worker each, but the last when there are two or more: that one is left to
/// the collector thread (`CollectorPin`) and the in-process simulator, so no worker shares
/// its core. One CPU: one worker on it.
pub fn auto_worker_cpus(online: &[usize]) -> Vec<usize> {
    match online {
        [] => vec![0],
        [one] => vec![*one],
        [workers @ .., _spare] => workers.to_vec(),
    }
}

/// The simulator's CPUs when none are given: the first CPU the workers do not use, so its work
/// never lands on a worker's core; on a machine with no such CPU, the last one. The one rule
/// for `run`'s in-process simulator, `calibrate`, and `ringbench sim` (no workers: the first).
pub fn default_sim_cpus(online: &[usize], workers: &[usize]) -> Vec<usize> {
    let free = online.iter().copied().find(|c| !workers.contains(c));
    vec![free.or(online.last().copied()).unwrap_or(0)]
}

/// Pins the collecting thread to a CPU no worker uses for as long as it lives, then restores
/// the thread's old CPU set. Why: a worker that polls keeps its core busy, and the scheduler
/// still placed the collector's wake-ups there now and then, preempting the worker for the
/// length of a batch. With no spare CPU the thread is left where it was.
pub(crate) struct CollectorPin {
    old: Option<libc::cpu_set_t>,
}

impl CollectorPin {
    pub(crate) fn away_from(worker_cpus: &[usize]) -> Self {
        let Some(old) = thread_cpus() else {
            return CollectorPin { old: None };
        };
        let Some(cpu) = cpus_in(&old).find(|cpu| !worker_cpus.contains(cpu)) else {
            return CollectorPin { old: None };
        };
        // SAFETY: an all-zero cpu_set_t is the empty set; `cpu` < CPU_SETSIZE.
        let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu, &mut one) };
        let pinned = set_thread_cpus(&one);
        CollectorPin {
            old: pinned.then_some(old),
        }
    }
}

impl Drop for CollectorPin {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            set_thread_cpus(old);
        }
    }
}

/// The CPUs in `set`, lowest first.
fn cpus_in(set: &libc::cpu_set_t) -> impl Iterator<Item = usize> + '_ {
    // SAFETY: every `cpu` tested is < CPU_SETSIZE, the set's size.
    (0..libc::CPU_SETSIZE as usize).filter(move |&cpu| unsafe { libc::CPU_ISSET(cpu, set) })
}

fn thread_cpus() -> Option<libc::cpu_set_t> {
    // SAFETY: the kernel fills at most `size_of::<cpu_set_t>()` bytes of `set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    (rc == 0).then_some(set)
}

fn set_thread_cpus(set: &libc::cpu_set_t) -> bool {
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) == 0 }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_rule_keeps_the_simulator_off_the_workers() {
        use super::{default_sim_cpus, default_worker_cpus};
        assert_eq!(default_worker_cpus(&[2, 3]), vec![2]);
        assert_eq!(default_sim_cpus(&[0, 1], &[0]), vec![1]);
        assert_eq!(
            default_sim_cpus(&[0, 1], &[0, 1]),
            vec![1],
            "no free CPU: the last"
        );
        assert_eq!(default_sim_cpus(&[0], &[0]), vec![0]);
        let auto = super::auto_worker_cpus(&[4, 5, 9]);
        assert_eq!(auto, vec![4, 5], "--cpus auto: all but the last");
        assert_eq!(
            default_sim_cpus(&[4, 5, 9], &auto),
            vec![9],
            "the spare one"
        );
        assert_eq!(
            super::auto_worker_cpus(&[3]),
            vec![3],
            "one CPU: one worker"
        );
        assert_eq!(super::auto_worker_cpus(&[]), vec![0]);
        assert_eq!(
            default_sim_cpus(&[0, 1], &[]),
            vec![0],
            "ringbench sim: the first"
        );
    }

    #[test]
    fn the_collector_leaves_the_workers_cpus_and_gets_its_own_back() {
        use super::{cpus_in, thread_cpus, CollectorPin};
        let before = thread_cpus().expect("sched_getaffinity");
        let allowed: Vec<usize> = cpus_in(&before).collect();
        {
            let _pin = CollectorPin::away_from(&allowed[..1]);
            let on: Vec<usize> = cpus_in(&thread_cpus().unwrap()).collect();
            if allowed.len() > 1 {
                assert_eq!(on, vec![allowed[1]]);
            } else {
                assert_eq!(on, allowed, "no spare CPU: left where it was");
            }
        }
        // Every worker CPU taken: nothing to do.
        drop(CollectorPin::away_from(&allowed));
        let after = thread_cpus().unwrap();
        assert!(unsafe { libc::CPU_EQUAL(&before, &after) });
    }
}
