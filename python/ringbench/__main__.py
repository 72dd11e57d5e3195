"""``python -m ringbench ...`` is the ``ringbench`` command."""

from ._cli import main

main()
