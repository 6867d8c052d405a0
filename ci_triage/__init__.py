"""ci-triage: is a red CI job the PR's fault or the runner's?"""

__version__ = "0.1.0"
