"""Argv plans: what a translated shell command asks the executor to run.

A plan is plain, JSON-serialisable data: which programs run with which words,
how they are piped and redirected, and how the steps' outputs combine. The
:mod:`command_handle.utcp` layer produces plans from UTCP templates; the
executor runs them. Nothing here spawns a process or touches the filesystem.
"""

from ._model import (
    BUILTIN_NAMES,
    Arg,
    Assignment,
    Command,
    Lit,
    Part,
    Pipeline,
    Plan,
    PlanEnvironment,
    Redirect,
    RedirectOp,
    Sequence,
    Step,
    Subst,
    Tilde,
    Var,
    Word,
    iter_parts,
    word_is_static,
    word_text,
)
from ._taint import STEP_OUTPUT, data_variables, sequence_uses_data, word_uses_data
from ._walk import iter_commands, substitute_variables, word_arguments

__all__ = [
    "BUILTIN_NAMES",
    "Arg",
    "Assignment",
    "Command",
    "Lit",
    "Part",
    "Pipeline",
    "Plan",
    "PlanEnvironment",
    "Redirect",
    "RedirectOp",
    "Sequence",
    "Step",
    "Subst",
    "Tilde",
    "Var",
    "STEP_OUTPUT",
    "Word",
    "data_variables",
    "iter_commands",
    "iter_parts",
    "substitute_variables",
    "sequence_uses_data",
    "word_arguments",
    "word_is_static",
    "word_text",
    "word_uses_data",
]
