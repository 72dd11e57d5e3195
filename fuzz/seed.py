#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from the real servers' captures in tests/data/sse
(or $FIXTURES): whole responses for response_head, chunked bodies for chunked, decoded
SSE bodies for sse_split, single event payloads for extract."""
import os, pathlib, sys

here = pathlib.Path(__file__).resolve().parent
fixtures = pathlib.Path(os.environ.get("FIXTURES", here.parent / "tests" / "data" / "sse"))
if not fixtures.is_dir():
    sys.exit(f"no captures at {fixtures} (set FIXTURES to a folder of <server>/<name>.wire.bin)")
out = here / "corpus"

def dechunk(body):
    data, i = b"", 0
    while i < len(body):
        j = body.find(b"\r\n", i)
        if j < 0:
            break
        size = int(body[i:j].split(b";")[0] or b"0", 16)
        if size == 0:
            break
        data += body[j + 2 : j + 2 + size]
        i = j + 2 + size + 2
    return data

n = 0
for wire in sorted(fixtures.glob("*/*.wire.bin")):
    name = f"{wire.parent.name}_{wire.stem}"
    raw = wire.read_bytes()
    head, _, body = raw.partition(b"\r\n\r\n")
    chunked = b"chunked" in head.lower()
    sse = dechunk(body) if chunked else body
    files = {
        "response_head": b"\x80" + raw,
        "chunked": body if chunked else None,
        "sse_split": b"\x05" + sse,
    }
    for target, data in files.items():
        if data is not None:
            (out / target).mkdir(parents=True, exist_ok=True)
            (out / target / name).write_bytes(data)
            n += 1
    for k, line in enumerate(sse.split(b"\n")):
        if line.startswith(b"data: "):
            (out / "extract").mkdir(parents=True, exist_ok=True)
            (out / "extract" / f"{name}_{k}").write_bytes(line[6:].rstrip(b"\r"))
            n += 1
print(f"{n} seeds from {fixtures}", file=sys.stderr)
