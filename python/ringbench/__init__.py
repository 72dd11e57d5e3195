"""ringbench: a load generator for LLM inference servers, from Python.

``run(**flags)`` takes ``ringbench run``'s flags as keyword arguments (``request_rate=10`` for
``--request-rate 10``), checks them with the command's own parser and messages
(``UsageError``), runs with the GIL released and returns a :class:`Summary`. Without ``url``
it benchmarks the built-in simulator. Ctrl-C stops a run as SIGINT stops the command: sending
stops, requests in flight get ``--grace``, and the summary of what ran comes back with
``summary.interrupted`` true. ``Summary.records()`` is one row per request as a
``pyarrow.Table``. ``sim(**flags)`` starts the simulator and yields its URL.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional

from . import _native
from ._native import UsageError

__all__ = ["run", "sim", "argv_of", "Summary", "UsageError", "main", "__version__"]
__version__: str = _native.__version__


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the ``ringbench`` command with ``argv`` (without the program name); its exit status."""
    return _native.main(["ringbench", *(argv or [])])


def _value(v: Any) -> str:
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def argv_of(command: str, flags: Mapping[str, Any]) -> List[str]:
    """The command line ``ringbench COMMAND`` that keyword arguments stand for.

    ``name=value`` is ``--name=value`` with underscores as dashes; ``True`` is the bare flag,
    ``False`` and ``None`` leave it out; a list or tuple repeats the flag once per item.
    """
    argv = ["ringbench", command]
    for key, v in flags.items():
        flag = "--" + key.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            argv.append(flag)
        elif isinstance(v, (list, tuple)):
            argv.extend(f"{flag}={_value(x)}" for x in v)
        else:
            argv.append(f"{flag}={_value(v)}")
    return argv


class Summary(Mapping[str, Any]):
    """A run's summary: the keys of ``summary.json``.

    Read as a mapping (``s["latency_ms"]["ttft"]["p99"]``) or by attribute
    (``s.latency_ms["ttft"]["p99"]``); ``to_dict()`` is a plain ``dict``; ``records()`` the
    run's records as a ``pyarrow.Table``.
    """

    def __init__(self, data: Dict[str, Any], output: Any = None) -> None:
        self._data = data
        self._output = output

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_data"][name]
        except KeyError:
            raise AttributeError(f"the summary has no key {name!r}") from None

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def __repr__(self) -> str:
        ttft = (self._data.get("latency_ms") or {}).get("ttft") or {}
        counts = self._data.get("counts") or {}
        return (
            f"<ringbench.Summary ok={counts.get('ok')} failed={counts.get('failed')} "
            f"ttft_p50_ms={ttft.get('p50')} interrupted={self._data.get('interrupted')}>"
        )

    def to_dict(self) -> Dict[str, Any]:
        """The summary as plain ``dict``s and lists (a copy), as ``summary.json`` holds it."""
        return json.loads(json.dumps(self._data))

    def records(self) -> Any:
        """One row per scheduled request (warm-up included) as a ``pyarrow.Table``.

        Columns are those of ``requests.parquet`` (stamps ``int64`` ns on the run clock, null
        when it did not happen; ``events`` a list of structs) and per-request durations in
        float ms (``ttft_ms``, ``ttfb_ms``, ``e2e_ms``, ``tpot_ms``, ``upload_ms``,
        ``sched_lag_ms``, ``max_stall_ms``). The columns come through the Arrow C data
        interface without a copy; ``.to_pandas()`` or ``polars.from_arrow`` from there.
        """
        import pyarrow as pa

        if self._output is None:
            raise ValueError("this summary has no records (it was not returned by run())")
        batches = self._output.record_batches()
        return pa.Table.from_batches(batches, schema=batches[0].schema)


def run(
    url: Optional[str] = None,
    *,
    on_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
    **flags: Any,
) -> Summary:
    """One benchmark run: ``ringbench run`` with ``flags``; the :class:`Summary`.

    ``url`` is ``--url`` (``None``: the built-in simulator). ``flags`` are the command's
    flags with underscores (``request_count=100``, ``request_rate=5``, ``out="results"``);
    a flag the command refuses raises :class:`UsageError` with its message, before any
    request is sent. ``on_progress`` is called about once a second from the collector's
    thread with a ``dict`` of live counts (``elapsed_s``, ``sent``, ``ok``, ``failed``,
    ``in_flight``, ``ttft_p50_ms``, ...); an exception it raises stops the run and is raised
    here. Ctrl-C (``KeyboardInterrupt``) stops the run cleanly: the summary of what ran is
    returned, ``interrupted`` true.
    """
    if url is not None:
        flags = {"url": url, **flags}
    out = _native.run(argv_of("run", flags), on_progress)
    return Summary(json.loads(out.summary_json), out)


@contextlib.contextmanager
def sim(**flags: Any) -> Iterator[str]:
    """The built-in simulator on a free local port, with ``ringbench sim``'s flags
    (``ttft_ms=20``, ``itl_ms=5``, ``cpus="1"``, ...); yields its URL and stops it
    on exit."""
    flags.setdefault("port", 0)
    handle = _native.sim_start(argv_of("sim", flags))
    try:
        yield handle.url
    finally:
        handle.stop()
