"""The one error hierarchy of podium.

An exception means "could not evaluate"; a broken rule is a ``Finding`` (data), never
an exception. Each error subclasses the matching builtin so callers that know nothing
of podium can still catch it, and carries the path, key or check id it is about.

    PodiumError
    ├── UsageError(ValueError)            wrong arguments or options       exit 2
    ├── SchemaError(ValueError)           a document breaks its schema     exit 1
    ├── BundleError(ValueError)           a bundle cannot be read safely   exit 1
    ├── MissingExtraError(ImportError)    an optional dependency is absent exit 3
    ├── EngineError(RuntimeError)         the engine under test misbehaved exit 3
    │   └── EngineTimeout(TimeoutError)
    ├── DockerError(RuntimeError)         the Docker engine failed         exit 3
    │   └── ImageBuildError               a build step failed              exit 3
    ├── HubError(RuntimeError)            the Hugging Face Hub failed      exit 3
    ├── StoreError(RuntimeError)          a leaderboard/queue store failed exit 3
    ├── SignatureError(ValueError)        a signature does not verify      exit 1
    └── SetCheckError(ValueError)         a store's whole set does not check exit 1

Exit codes (documented in the CLI help and docs/cli.md): 0 ok / verified, 1 findings /
rejected, 2 usage, 3 could not evaluate.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_CANNOT_EVALUATE = 3


class PodiumError(Exception):
    """Base of every error podium raises on purpose.

    ``hint`` is the next thing the user can try; ``where`` names the file, key, JSON
    path or check id the error is about.
    """

    exit_code = EXIT_CANNOT_EVALUATE

    def __init__(self, message: str, *, hint: str | None = None, where: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.where = where

    def __str__(self) -> str:
        if self.where and self.where not in self.message:
            return f"{self.where}: {self.message}"
        return self.message


class UsageError(PodiumError, ValueError):
    """The command was called wrongly (bad option, missing file, unknown name)."""

    exit_code = EXIT_USAGE


class SchemaError(PodiumError, ValueError):
    """A document does not match its JSON Schema.

    ``file`` is the document's path (or a label), ``json_path`` the failing location
    (``$.tps.num_prompts``), ``expected`` what the schema wanted there.
    """

    exit_code = EXIT_FINDINGS

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        json_path: str = "$",
        expected: str | None = None,
        hint: str | None = None,
        errors: list[SchemaError] | None = None,
    ):
        where = f"{file}:{json_path}" if file else json_path
        super().__init__(message, hint=hint, where=where)
        self.file = file
        self.json_path = json_path
        self.expected = expected
        self.errors = errors or []


class BundleError(PodiumError, ValueError):
    """A bundle cannot be opened safely; ``finding_id`` names the rule it broke."""

    exit_code = EXIT_FINDINGS

    def __init__(
        self, message: str, *, finding_id: str, hint: str | None = None, where: str | None = None
    ):
        super().__init__(message, hint=hint, where=where)
        self.finding_id = finding_id


class MissingExtraError(PodiumError, ImportError):
    """An optional dependency is not installed; the hint is the pip line to run."""

    exit_code = EXIT_CANNOT_EVALUATE


class EngineError(PodiumError, RuntimeError):
    """The engine under test crashed, answered nonsense or could not be reached.

    ``message`` is podium's own words only (a status code, an exception type, a byte
    count), fit for the participant; what the engine itself sent (an error body, an
    unparsable answer) is ``engine_text``, which goes to the organizer's log and nowhere
    else: it may carry the held-out text the engine was sent (``docs/measurement.md``,
    "What leaves the sandbox").
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        where: str | None = None,
        engine_text: str | None = None,
    ):
        super().__init__(message, hint=hint, where=where)
        self.engine_text = engine_text


class EngineTimeout(EngineError, TimeoutError):
    """The engine did not answer within the limit the challenge allows."""


class DockerError(PodiumError, RuntimeError):
    """The Docker engine refused or failed an operation."""


class ImageBuildError(DockerError):
    """An image build stopped at one of its steps.

    ``step`` is that step as the build log names it (``"2/3 : RUN pip install x"``),
    ``network`` whether its output shows it reached for a network the build does not
    have (builds run with none), and ``urls`` the addresses the step names.
    """

    def __init__(
        self,
        message: str,
        *,
        step: str | None = None,
        network: bool = False,
        urls: tuple[str, ...] = (),
        hint: str | None = None,
        where: str | None = None,
    ):
        super().__init__(message, hint=hint, where=where)
        self.step = step
        self.network = network
        self.urls = urls


class HubError(PodiumError, RuntimeError):
    """The Hugging Face Hub could not be reached or refused the request."""


class StoreError(PodiumError, RuntimeError):
    """A leaderboard or queue store could not be read or written."""


class SignatureError(PodiumError, ValueError):
    """A signature is missing, malformed or does not match its document."""

    exit_code = EXIT_FINDINGS


class SetCheckError(PodiumError, ValueError):
    """A leaderboard store's whole set does not check against its signed head (a row
    missing or unlisted, a rollback, a revoked or unknown head key): nothing it holds is
    offered as proven."""

    exit_code = EXIT_FINDINGS
