"""A plan's checks before its first step: the whole plan, or nothing runs.

Missing arguments, text with no byte form, the starting environment, the
working directory, variables the policy refuses, and every program written
literally (found, not set-user-ID, on the allowlist) are checked here, over
every step, so that a refusal never comes after an earlier step has run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .._ostext import exec_size_problem, os_text_problem
from ..errors import (
    ArgumentsError,
    CommandError,
    EnvironmentVariableError,
    OptionArgumentError,
    Violation,
)
from ..plan import (
    BUILTIN_NAMES,
    Arg,
    Command,
    Lit,
    Plan,
    Word,
    iter_commands,
    substitute_variables,
    word_is_static,
    word_text,
)
from ._enforce import (
    check_program,
    check_variable_name,
    check_variable_value,
    inherited_environment,
    resolve_directory,
)
from ._options import first_option_word
from ._policy import Policy

__all__ = ["BASH_DEFAULT_PATH", "check_plan", "find_program", "plan_environment"]

BASH_DEFAULT_PATH = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"


def inheritable(names: tuple[str, ...], policy: Policy) -> tuple[str, ...]:
    """The host variables a template may inherit: those it names that the policy
    passes through (``Policy.inherit_environment``), never a dangerous one.
    A template's ``inherit_env_vars`` (or utcp-cli's default list) asks; the
    policy decides (red-team finding 9)."""
    allowed = set(policy.inherit_environment)
    return tuple(n for n in names if n in allowed and not policy.refuses_variable(n))


def plan_environment(plan: Plan, variables: Mapping[str, str], policy: Policy) -> dict[str, str]:
    """The starting environment: inherited host names, then the plan's values with
    the caller's variables substituted."""
    env = inherited_environment(inheritable(plan.environment.inherit, policy))
    for name, template in plan.environment.set:
        where = f"/env_vars/{name}"
        check_variable_name(name, policy, where)
        value, missing = substitute_variables(template, variables, plan.name)
        if missing:
            raise EnvironmentVariableError(
                f"env_vars/{name} refers to the variable {missing[0]!r}, which is not in the "
                "variables given to the call (give it as a UTCP variable: Toolbox variables= "
                "or variable_files=, UtcpClient variables or load_variables_from, or "
                "command-handle --variable NAME=VALUE or --variables-file FILE)",
                where,
            )
        env[name] = check_variable_value(name, value, where)
    return env


def find_program(name: str, cwd: str, search: tuple[str, ...]) -> str | None:
    """Where bash would find ``name``: relative to ``cwd`` with a slash, else the
    first absolute ``search`` entry holding an executable file; None if nowhere."""
    if "/" in name:
        path = os.path.normpath(os.path.join(cwd, name))
        return path if os.path.exists(path) else None
    for entry in search:
        # Relative entries would make the lookup depend on the directory: skipped.
        candidate = os.path.join(entry, name)
        if os.path.isabs(entry) and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def check_plan(
    plan: Plan, arguments: Mapping[str, str], variables: Mapping[str, str], policy: Policy
) -> tuple[dict[str, str], str]:
    """Check the whole plan against the call and the policy; raise before anything
    runs. Returns the steps' starting environment and working directory."""
    _check_arguments_given(plan, arguments)
    _check_argument_words(plan, arguments, policy)
    env = plan_environment(plan, variables, policy)
    _check_sizes(plan, arguments, env)
    cwd = resolve_directory(plan.working_dir or policy.workspace, "/working_dir")
    search = policy.search_path
    if search is None:
        search = tuple(env.get("PATH", BASH_DEFAULT_PATH).split(os.pathsep))
    for step, command in iter_commands(plan):
        where = f"/commands/{step}/command"
        _check_assignments(command, policy, where)
        _check_literal_program(command, cwd, search, policy, where)
    return env, cwd


def _check_arguments_given(plan: Plan, arguments: Mapping[str, str]) -> None:
    """Every placeholder has a value, and each value has a byte form."""
    violations = [
        Violation(f"/{name}", f"missing argument {name!r} used by the template", "required")
        for name in plan.arguments
        if name not in arguments
    ]
    violations += [
        Violation(f"/{name}", f"the value {problem}", "os-text")
        for name in plan.arguments
        if name in arguments and (problem := os_text_problem(arguments[name]))
    ]
    if violations:
        raise ArgumentsError(violations)


def _check_assignments(command: Command, policy: Policy, where: str) -> None:
    """``NAME=value`` before a command: a name the policy lets templates set, and
    no tool argument in a variable that programs read as options or commands."""
    for assignment in command.assignments:
        check_variable_name(assignment.name, policy, where)
        value = assignment.value or ()
        if any(isinstance(part, Arg) for part in value) and policy.refuses_model_value(
            assignment.name
        ):
            raise EnvironmentVariableError(
                f"{assignment.name} is read by programs as options or commands; a tool "
                "argument may not set it (Policy.allow_environment)",
                where,
            )


def _check_literal_program(
    command: Command, cwd: str, search: tuple[str, ...], policy: Policy, where: str
) -> None:
    """A program written literally is checked now (found, not set-user-ID, on the
    allowlist); one that is not found is bash's "command not found" (status
    127) at run time, as the template may create it or change directory first.
    A computed program is refused when the policy lists the allowed commands."""
    if not command.words:
        return
    first = command.words[0]
    if not word_is_static(first):
        if policy.allowed_commands is not None:
            raise CommandError(
                "the policy lists the allowed commands, so the program must be written "
                "literally, not computed",
                where,
            )
        return
    name = word_text(first)
    if name in BUILTIN_NAMES or ("/" in name and not os.path.isabs(name)):
        return  # a relative path is resolved where the step has gone by then
    path = find_program(name, cwd, search)
    if path is not None and os.path.isfile(path):
        check_program(path, policy, where, shown=name)
    elif policy.allowed_commands is not None and name not in policy.allowed_commands:
        raise CommandError(f"the policy does not allow the command {name!r}", where)


def _leading_argument(word: Word) -> Arg | None:
    """The argument whose value begins ``word``, if one does (empty quotes skipped)."""
    for part in word:
        if isinstance(part, Lit) and not part.text:
            continue
        return part if isinstance(part, Arg) else None
    return None


def _check_argument_words(plan: Plan, arguments: Mapping[str, str], policy: Policy) -> None:
    """The flag guard (red-team finding 12) over what is known before the run: a
    word of a program's arguments that a tool argument's value begins is
    refused when that value starts like an option (``allow_utcp_options``,
    utcp-cli's behaviour, allows it). Checked for the whole plan before its
    first step; the interpreter applies the same guard to expanded values."""
    if policy.allow_utcp_options:
        return
    for _, command in iter_commands(plan):
        words: list[tuple[str, bool]] = []
        leaders: list[Arg | None] = []
        for word in command.words[1:]:
            arg = None if word_is_static(word) else _leading_argument(word)
            leaders.append(arg)
            if arg is not None:
                words.append((arguments.get(arg.name, ""), True))
            else:
                words.append((word_text(word) if word_is_static(word) else "", False))
        found = first_option_word(words)
        if found is not None:
            arg = leaders[found[0]]
            assert arg is not None
            raise OptionArgumentError(arg.name, f"/{arg.name}", found[1])


def _check_sizes(plan: Plan, arguments: Mapping[str, str], env: Mapping[str, str]) -> None:
    """Each command's arguments, as far as they are known before the run (literal
    text and tool arguments), must fit execve's limits: a value too large is
    refused before the first step rather than after earlier steps ran
    (red-team finding 11)."""
    for _, command in iter_commands(plan):
        known: list[str] = []
        used: list[list[str]] = []  # the arguments in each word
        for word in command.words:
            text, names = "", []
            for part in word:
                if isinstance(part, Lit):
                    text += part.text
                elif isinstance(part, Arg):
                    text += arguments.get(part.name, "")
                    names.append(part.name)
            known.append(text)
            used.append(names)
        if not any(used):
            continue
        problem = exec_size_problem(["-", *known[1:]], dict(env))
        if problem is not None:
            why, index = problem
            everywhere = [name for names in used for name in names]
            culprits = used[index] if index is not None and used[index] else everywhere
            at = culprits[0]
            raise ArgumentsError([Violation(f"/{at}", f"`{at}` {why}", "size")])
