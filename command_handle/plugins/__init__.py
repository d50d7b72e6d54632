"""Bash tool plugins: one bash script per tool, answering ``schema``,
``preview``, ``run`` and an optional ``error`` subcommand.

This front end turns a plugin into the one prepared call: :func:`parse_schema`
checks what ``bash FILE schema`` printed and gives a :class:`BashTool`, whose
:meth:`BashTool.prepare` makes the call of a subcommand with the model's
arguments in the tool's ``args_mode``. :func:`program_call` prepares the
loader's own programs (``bash FILE schema``, ``git``). Nothing here spawns;
the Toolbox runs these calls on the executor. :mod:`._sources` reads the
documents that name plugins (``agent_plugin.json``, an application config).
"""

from ._errors import BashToolError
from ._program import program_call
from ._sources import (
    DESCRIPTOR,
    ConfigPlugins,
    PluginPolicy,
    PluginSource,
    config_plugins,
    descriptor_files,
    git_checkout_argv,
    git_folder_name,
    shortcut,
)
from ._tool import BashTool, config_variable, parse_schema
from .modes import MODES

__all__ = [
    "DESCRIPTOR",
    "MODES",
    "BashTool",
    "BashToolError",
    "ConfigPlugins",
    "PluginPolicy",
    "PluginSource",
    "config_plugins",
    "config_variable",
    "descriptor_files",
    "git_checkout_argv",
    "git_folder_name",
    "parse_schema",
    "program_call",
    "shortcut",
]
