"""The participant side: a submission directory becomes a frozen, hashed bundle.

The flow is ``init`` (scaffold a directory) -> ``validate`` (every problem as a
``Finding``) -> ``freeze`` (resolve the base image, hash every file, write
``manifest.json``) -> ``bundle`` (a deterministic ``.tar.gz``) -> image build, plus
``import`` of the real Fast Gemma Challenge format and ``push`` to the Hub.
``safe_bundle`` opens a bundle without trusting it; the verifier reuses it.
"""
