"""Contracts that exported artefacts must honour, checked next to the CI triage.

``d2t`` is the drafter vocabulary-mapping contract (EAGLE-3 / P-EAGLE). Submodules are
not imported here on purpose: ``ci-triage --help`` must not pay for numpy.
"""
