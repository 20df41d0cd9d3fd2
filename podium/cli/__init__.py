"""The ``podium`` command line: wiring only; every command body calls library functions."""
