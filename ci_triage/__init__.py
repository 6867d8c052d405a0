"""ci-triage: is a red CI job the PR's fault or the runner's?"""

__version__ = "0.1.0"

# The native regex engines (hyperscan, RE2) live outside the pure core and register into it here,
# before any core module is used; their libraries load on first use only.
from ci_triage import engines as _engines  # noqa: E402,F401
from ci_triage import rules_cache as _rules_cache  # noqa: E402
from ci_triage.core.logs.cache_hook import register_builtin_cache as _register_builtin_cache  # noqa: E402

# The built-in rule set's loaded form, kept in the user cache directory (ci_triage/rules_cache.py).
_register_builtin_cache(*_rules_cache.hooks(__version__))
