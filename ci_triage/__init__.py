"""ci-triage: is a red CI job the PR's fault or the runner's?"""

__version__ = "0.1.0"

# The native regex engines (hyperscan, RE2) live outside the pure core and register into it here,
# before any core module is used; their libraries load on first use only.
from ci_triage import engines as _engines  # noqa: E402,F401
