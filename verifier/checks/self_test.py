"""``reference.self-test``: the verifier's reference proves itself before it judges.

The evidence is the document the loaded reference wrote about its own attention path on
this machine (``ReferenceRunner.self_test()``, read into ``CheckContext.self_test``): it
serves only with a path that passed, so a document means a pass, and its summary and
details go to the report as they are. No document means the reference cannot be shown to
compute correctly here: "could not evaluate", which the pipeline turns into a FAILED run
at ``reference-load`` (the organizer's fault, never the entry's).
"""

from __future__ import annotations

from schemas.check_ids import REFERENCE_SELF_TEST
from verifier.checks.base import CheckContext, CheckOutcome, passed, unreliable

#: the summary of a reference that wrote no self-test document
NO_REPORT = (
    "the verifier's reference engine did not report its self-test, so it cannot be "
    "shown to compute correctly here"
)


def self_test(ctx: CheckContext) -> CheckOutcome:
    document = ctx.self_test
    if document is None:
        return unreliable(REFERENCE_SELF_TEST, NO_REPORT)
    return passed(REFERENCE_SELF_TEST, str(document.get("summary", "")), document)
