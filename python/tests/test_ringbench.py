"""The Python package against the built-in simulator: run(), the Summary, records() as
pyarrow, the progress callback, sim(), the CLI's messages, Ctrl-C, the `ringbench` command,
and --records parquet read back with pyarrow."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import ringbench

# Fast simulator answers so the suite stays short.
FAST = {"sim_ttft_ms": 2, "sim_itl_ms": 0.5, "output_tokens": 8}


def test_run_returns_a_summary_with_item_and_attribute_access():
    s = ringbench.run(request_count=100, **FAST)
    assert isinstance(s, ringbench.Summary)
    assert s.counts["ok"] == 100
    p50 = s.latency_ms["ttft"]["p50"]
    assert p50 == s["latency_ms"]["ttft"]["p50"]
    assert 1.0 < p50 < 1000.0
    d = s.to_dict()
    assert isinstance(d, dict) and d["counts"]["scheduled"] == 100
    json.dumps(d)
    assert s.interrupted is False
    with pytest.raises(AttributeError):
        s.no_such_key


def test_records_are_a_pyarrow_table_one_row_per_scheduled_request():
    s = ringbench.run(request_count=150, **FAST)
    t = s.records()
    assert isinstance(t, pa.Table)
    assert t.num_rows == s.counts["scheduled"] == 150
    assert t.schema.field("sent_ns").type == pa.int64()
    assert t.schema.field("ttft_ms").type == pa.float64()
    assert pa.types.is_list(t.schema.field("events").type)
    assert sorted(t.column("id").to_pylist()) == list(range(150))
    ok = t.filter(pc.equal(t.column("outcome"), "ok"))
    assert ok.num_rows == 150
    # The per-request durations are the stamps' differences, in ms.
    row = ok.slice(0, 1).to_pylist()[0]
    assert row["ttft_ms"] == pytest.approx((row["first_token_ns"] - row["sent_ns"]) / 1e6)
    assert row["e2e_ms"] == pytest.approx((row["done_ns"] - row["sent_ns"]) / 1e6)
    # The summary's median TTFT is the records' (within the histogram's precision).
    measured = [r for r in ok.column("ttft_ms").to_pylist() if r is not None]
    measured.sort()
    median = measured[len(measured) // 2]
    assert s.latency_ms["ttft"]["p50"] == pytest.approx(median, rel=0.05)


def test_a_bad_flag_is_refused_with_the_clis_message_before_any_request():
    with pytest.raises(ringbench.UsageError) as e:
        ringbench.run(request_rate="fast")
    assert "--request-rate" in str(e.value)
    with pytest.raises(ringbench.UsageError) as e:
        ringbench.run(no_such_flag=1)
    assert "--no-such-flag" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_the_progress_callback_runs_on_another_thread_with_live_counts():
    seen = []

    def progress(live):
        seen.append((threading.get_ident(), dict(live)))

    s = ringbench.run(request_count=60, request_rate=25, on_progress=progress, **FAST)
    assert s.counts["ok"] == 60
    assert 1 <= len(seen) <= 10, seen
    assert all(tid != threading.get_ident() for tid, _ in seen)
    assert {"elapsed_s", "sent", "ok", "failed", "in_flight"} <= set(seen[-1][1])


def test_an_exception_in_the_callback_stops_the_run_and_is_raised():
    def progress(live):
        raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        ringbench.run(duration="30s", request_rate=20, on_progress=progress, **FAST)


def test_sim_is_a_context_manager_yielding_its_url():
    with ringbench.sim(ttft_ms=2, itl_ms=0.5) as url:
        assert url.startswith("http://127.0.0.1:")
        s = ringbench.run(url, request_count=20, output_tokens=4)
        assert s.counts["ok"] == 20
        assert s.config["targets"] == [url] or url in json.dumps(s.config)


def test_ctrl_c_stops_the_run_and_returns_the_partial_summary():
    pid = os.getpid()
    timer = threading.Timer(1.5, lambda: os.kill(pid, signal.SIGINT))
    timer.start()
    started = time.monotonic()
    s = ringbench.run(duration="60s", request_rate=50, grace="1s", **FAST)
    took = time.monotonic() - started
    timer.join()
    assert took < 20, took
    assert s.interrupted is True
    assert 0 < s.counts["ok"] < 50 * 60
    t = s.records()
    assert t.num_rows == s.counts["scheduled"]


def test_records_parquet_is_read_back_by_pyarrow_and_by_report(tmp_path):
    out = tmp_path / "run"
    s = ringbench.run(request_count=120, out=out, records="parquet", **FAST)
    assert not (out / "requests.jsonl").exists()
    t = pq.read_table(out / "requests.parquet")
    assert t.num_rows == 120
    assert t.schema.field("intended_ns").type == pa.int64()
    mem = s.records()
    assert t.column("id").to_pylist() == mem.column("id").to_pylist()
    assert t.column("done_ns").to_pylist() == mem.column("done_ns").to_pylist()
    # `ringbench report DIR` recomputes the same summary from the Parquet log.
    again = tmp_path / "again"
    code = ringbench.main(["report", str(out), "--out", str(again)])
    # 4: the run was marked invalid for the host's load (the 2 shared CPUs of CI); the
    # recomputed summary must still be the run's.
    assert code in (0, 4)
    a = json.loads((out / "summary.json").read_text())
    b = json.loads((again / "summary.json").read_text())
    assert a["latency_ms"] == b["latency_ms"] and a["counts"] == b["counts"]


def test_the_ringbench_command_of_the_wheel_runs():
    exe = os.path.join(os.path.dirname(sys.executable), "ringbench")
    assert os.path.exists(exe), exe
    r = subprocess.run(
        [exe, "run", "--request-count", "20", "--quiet", "--sim-ttft-ms", "2", "--allow-invalid"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "TTFT" in r.stdout
    bad = subprocess.run([exe, "run", "--request-rate", "x"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "--request-rate" in bad.stderr
