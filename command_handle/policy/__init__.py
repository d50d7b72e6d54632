"""The application's policy, and the one module that enforces it.

:class:`Policy` is what the application allows. The enforcement functions
(directory, program, environment, argv size) are the single place where
handles, plans and legacy UTCP providers are checked against it; they raise
refusals that say what is wrong and where, and never spawn.
"""

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
from ._policy import DANGEROUS_ENVIRONMENT, OPTION_ENVIRONMENT, Policy, is_dangerous_name

__all__ = [
    "DANGEROUS_ENVIRONMENT",
    "OPTION_ENVIRONMENT",
    "Policy",
    "argv_problem",
    "check_program",
    "check_variable_name",
    "check_variable_value",
    "inherited_environment",
    "is_dangerous_name",
    "resolve_command",
    "resolve_directory",
    "resolve_environment",
]
