"""podium: verified LLM inference-speed competitions.

The ``podium`` package is the thin bottom layer shared by every other package
(errors, canonical JSON, signing, paths of shipped data) and the home of the CLI.
"""

__version__ = "0.1.0"
