#!/usr/bin/env python3
"""Makes a result folder free of this machine's paths: every text file under it gets the
repository's own absolute path replaced by nothing (so paths read relative to the
repository) and the temporary folder by `$TMPDIR`. The result tools call `scrub(folder)` on
the folder they wrote; run alone, it scrubs the folders it is given:

    tools/scrub.py tools/results/overhead-*/
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def replacements(extra=()):
    """(absolute prefix, what it becomes), longest first."""
    pairs = [(ROOT + "/", ""), (ROOT, ".")] + list(extra)
    tmp = tempfile.gettempdir().rstrip("/")
    pairs += [(tmp + "/", "$TMPDIR/")]
    return sorted(pairs, key=lambda p: -len(p[0]))


def scrub(folder, extra=()):
    """Rewrites the text files under `folder` in place; returns how many changed."""
    pairs = replacements(extra)
    changed = 0
    for top, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(top, name)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue  # binary (plots) or unreadable: nothing to say about paths
            new = text
            for old, repl in pairs:
                new = new.replace(old, repl)
            if new != text:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                changed += 1
    return changed


if __name__ == "__main__":
    # Results copied in from another checkout of this repository (a worktree) name it too.
    extra = [(p.rstrip("/") + "/", "") for p in os.environ.get("SCRUB_ALSO", "").split(":") if p]
    for folder in sys.argv[1:]:
        print(f"{folder}: {scrub(folder, extra)} files rewritten")
