"""The wheel's ``ringbench`` command: the binary's own code, run through the extension."""

import sys

from . import _native


def main() -> None:
    """Runs ``ringbench`` with this process's command line and exits with its status."""
    sys.stdout.flush()
    sys.exit(_native.main(["ringbench", *sys.argv[1:]]))
