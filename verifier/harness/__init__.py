"""The harness: drives an engine over HTTP (PPL, TPS, probes) and never knows how it runs.

It gathers evidence and judges nothing: ``run`` is the synchronous facade
(``gather_evaluation`` for the participant's engine, ``gather_with_reference`` for the
verifier's reference), and ``client``, ``wire``, ``render``, ``plan``, ``ppl``, ``tps``,
``probes``, ``controls``, ``rescoring`` (what the reference says of the sampled work),
``engine_runtime`` and ``vllm_output`` (what vLLM says of itself) and ``stats`` are the
parts it is made of. What it gathers is ``verifier.evidence``; ``verifier.stages`` hands
it to the checks.
"""
