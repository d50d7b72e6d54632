"""The application's policy, and every check of a call against it.

:class:`Policy` is what the application allows. The functions here are the
single place where handles, plans and 0.x UTCP providers are checked against
it: the directory, program lookup with the allowlist and set-user-ID rule
(``_enforce``), environment names, the argv size, the flag guard
(``_options``), path parameters (``_paths``), a plan's checks before its
first step (``_plan``) and the program file's identity for an approved call
(``_program_file``). They raise refusals that say what is wrong and where,
and never spawn.
"""

from typing import TYPE_CHECKING, Any

from ._enforce import (
    argv_problem,
    check_program,
    check_variable_name,
    check_variable_value,
    inherited_environment,
    resolve_command,
    resolve_directory,
    resolve_environment,
)
from ._options import first_option_word, option_prefix
from ._paths import check_directory_within, check_paths, root_of
from ._policy import DANGEROUS_ENVIRONMENT, OPTION_ENVIRONMENT, Policy, is_dangerous_name
from ._program_file import check_program_identity, program_identity

if TYPE_CHECKING:
    from ._plan import BASH_DEFAULT_PATH, check_plan, find_program, plan_environment

# A plan's checks load with the first plan (they import the plan model, about
# 10 ms), not with every front end that checks a single program.
_PLAN_NAMES = frozenset({"BASH_DEFAULT_PATH", "check_plan", "find_program", "plan_environment"})


def __getattr__(name: str) -> Any:
    if name in _PLAN_NAMES:
        from . import _plan

        value = getattr(_plan, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BASH_DEFAULT_PATH",
    "DANGEROUS_ENVIRONMENT",
    "OPTION_ENVIRONMENT",
    "Policy",
    "argv_problem",
    "check_directory_within",
    "check_paths",
    "check_plan",
    "check_program",
    "check_program_identity",
    "check_variable_name",
    "check_variable_value",
    "find_program",
    "first_option_word",
    "inherited_environment",
    "is_dangerous_name",
    "option_prefix",
    "plan_environment",
    "program_identity",
    "resolve_command",
    "resolve_directory",
    "resolve_environment",
    "root_of",
]
