"""What the harness gathers and the checks judge: plain data, owned by neither side.

The harness (``verifier.harness``) talks to engines and fills these types; the checks
(``verifier.checks``) read them and send nothing. Both import this package, and it
imports neither, so evidence flows one way: harness → evidence → checks.

- ``gathered``: the records of what an engine (the participant's, or the verifier's
  reference) answered, as the harness recorded them, and what a runner saw of the
  sandbox (``IsolationEvidence``);
- ``parse``: how an answer's fields are read (listed log-probabilities, their ranks,
  token ids outside the vocabulary), the same for the harness and the checks.
"""

from verifier.evidence.gathered import (
    AnswerScore,
    Evidence,
    IsolationEvidence,
    Position,
    PplAnswerShape,
    PplRecordScore,
    PplResult,
    RecordScore,
    ReferenceEvidence,
    RequestRecord,
    SamePathProbe,
    Stability,
    TpsResult,
    TrialResult,
    VllmImage,
)

__all__ = [
    "AnswerScore",
    "Evidence",
    "IsolationEvidence",
    "Position",
    "PplAnswerShape",
    "PplRecordScore",
    "PplResult",
    "RecordScore",
    "ReferenceEvidence",
    "RequestRecord",
    "SamePathProbe",
    "Stability",
    "TpsResult",
    "TrialResult",
    "VllmImage",
]
