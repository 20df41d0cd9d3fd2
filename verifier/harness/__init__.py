"""The harness: drives an engine over HTTP (PPL, TPS, probes) and never knows how it runs.

It gathers evidence and judges nothing: ``run`` is the synchronous facade
(``gather_evaluation`` for the participant's engine, ``gather_with_reference`` for the
verifier's reference), and ``client``, ``render``, ``plan``, ``ppl``, ``tps``,
``probes``, ``reference`` and ``stats`` are the async parts it is made of. What it
gathers is ``verifier.evidence``; ``verifier.evaluation`` hands it to the checks.
"""
