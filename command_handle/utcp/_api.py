"""Translate UTCP templates into plans and prepare calls; run them on an Executor.

:func:`translate` and :func:`prepare` never spawn. :func:`run`, :func:`call`
and :func:`discover` are conveniences that hand the prepared call to an
:class:`~command_handle.executor.Executor` (imported when first used), the
only code that starts processes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..call import Invocation, PlanResult, PreparedCall, PreparedPlan
from ..errors import ArgumentsError, CallTimeoutError, TranslationError, Violation
from ..plan import (
    Arg,
    Command,
    Plan,
    PlanEnvironment,
    Sequence,
    Step,
    Var,
    Word,
    data_variables,
    iter_commands,
    iter_parts,
    word_uses_data,
)
from ..policy import (
    Policy,
    argv_problem,
    check_plan,
    plan_environment,
    resolve_command,
    resolve_directory,
)
from ._models import (
    CliCallTemplate,
    LegacyCliProvider,
    Loaded,
    UtcpLoadError,
    UtcpManual,
    UtcpTool,
    _manual,
    load,
)
from ._translate import translate_command

if TYPE_CHECKING:
    from ..executor import Executor

from ._values import (
    legacy_arguments,
    legacy_problems,
    legacy_value,
    optional_arguments,
    render_arguments,
    utcp_value,
)

__all__ = [
    "DEFAULT_INHERITED",
    "PreparedCall",
    "prepare_plan",
    "output_value",
    "prepare",
    "call",
    "call_sync",
    "discover",
    "manual_from_output",
    "run",
    "run_sync",
    "translate",
]

# utcp-cli 1.1.5's allowlist on Unix when inherit_env_vars is null.
DEFAULT_INHERITED: tuple[str, ...] = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "USER",
    "LOGNAME",
    "SHELL",
    "TZ",
    "TERM",
)
_CMD_OUTPUT = re.compile(r"CMD_(\d+)_OUTPUT")

Source = Loaded | dict[str, Any] | str | os.PathLike[str]
_LOADED = (CliCallTemplate, LegacyCliProvider, UtcpManual, UtcpTool)


def _template(source: Source) -> CliCallTemplate | LegacyCliProvider | UtcpTool:
    loaded = source if isinstance(source, _LOADED) else load(source)
    if isinstance(loaded, UtcpManual):
        raise UtcpLoadError(
            "a manual holds several tools: pick one with manual.tool(name) "
            f"({', '.join(tool.name for tool in loaded.tools) or 'it has no CLI tools'})"
        )
    return loaded


def translate(source: Source) -> Plan:
    """The plan for a call template, tool or legacy provider (cached on the model).

    Raises :class:`~command_handle.errors.TranslationError` naming the step,
    column and construct when a command uses shell syntax that is not run.
    """
    template = _template(source)
    if isinstance(template, UtcpTool):
        template = template.template
    if template._plan is None:
        template._plan = (
            _translate_legacy(template)
            if isinstance(template, LegacyCliProvider)
            else _translate_template(template)
        )
    return template._plan


def _translate_template(template: CliCallTemplate) -> Plan:
    last = len(template.commands) - 1
    steps = []
    for index, step in enumerate(template.commands):
        # An empty step yields "" (utcp-cli runs an empty subshell).
        body = translate_command(step.command, index) if step.command.strip() else Sequence(())
        append = step.append_to_final_output
        appended = index == last if append is None else append
        steps.append(Step(index, step.command, appended, body, step.working_dir))
    plan = Plan(
        name=template.name,
        steps=tuple(steps),
        environment=PlanEnvironment(
            DEFAULT_INHERITED
            if template.inherit_env_vars is None
            else tuple(template.inherit_env_vars),
            tuple((template.env_vars or {}).items()),
        ),
        working_dir=template.working_dir,
        timeout=template.timeout_seconds,
    )
    names: dict[str, None] = {}
    from_data = data_variables(plan)
    for step_index, command in iter_commands(plan):
        if command.words and word_uses_data(command.words[0], from_data):
            raise TranslationError(
                "the program to run cannot come from a tool argument or a step's output, "
                "through a variable, a substitution or ~ either",
                step=step_index,
                source=template.commands[step_index].command,
                offset=command.offset,
                construct="computed program",
            )
        for word in _all_words(command):
            for part in iter_parts(word):
                if isinstance(part, Arg):
                    names.setdefault(part.name)
                elif isinstance(part, Var):
                    match = _CMD_OUTPUT.fullmatch(part.name)
                    if match and int(match.group(1)) >= step_index:
                        source = template.commands[step_index].command
                        raise TranslationError(
                            f"${part.name} is the output of step {match.group(1)}, which has "
                            f"not run yet at step {step_index}",
                            step=step_index,
                            source=source,
                            offset=command.offset,
                            construct="forward output reference",
                        )
    return Plan(
        name=plan.name,
        steps=plan.steps,
        environment=plan.environment,
        working_dir=plan.working_dir,
        arguments=tuple(names),
        timeout=plan.timeout,
    )


def _all_words(command: Command) -> list[Word]:
    out = list(command.words)
    out += [a.value for a in command.assignments if a.value is not None]
    out += [r.target for r in command.redirects]
    return out


def _translate_legacy(provider: LegacyCliProvider) -> Plan:
    try:
        argv = tuple(shlex.split(provider.command_name))
    except ValueError as exc:
        raise TranslationError(
            f"command_name cannot be split into words: {exc}",
            step=0,
            source=provider.command_name,
            offset=len(provider.command_name),
            construct="quoting",
        ) from None
    if not argv:
        raise TranslationError(
            "command_name is empty", step=0, source="", offset=0, construct="empty command"
        )
    return Plan(
        name=provider.name,
        environment=PlanEnvironment(DEFAULT_INHERITED, tuple(provider.environment.items())),
        working_dir=provider.working_dir,
        mode="legacy",
        legacy_command=argv,
        timeout=provider.timeout_seconds,
        output_format=provider.output_format,
    )


def prepare(
    source: Source,
    args: Mapping[str, Any] | None = None,
    *,
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
) -> PreparedCall[PlanResult]:
    """Validate the call and build what runs, without running it: a checked plan
    with its arguments' text, or a 0.x provider's one checked command (reported
    as a one-step plan). ``variables`` feed ``${NAME}`` in ``env_vars``. Raises
    a :class:`~command_handle.errors.HandleError` before anything runs."""
    policy = policy or Policy()
    args = dict(args or {})
    template = _template(source)
    if isinstance(template, UtcpTool):
        template.validate_arguments(args)
    plan = translate(template)
    if plan.mode == "legacy":
        declared = None
        order = None
        if isinstance(template, UtcpTool) and isinstance(template.inputs.get("properties"), dict):
            order = tuple(template.inputs["properties"])
            declared = frozenset(order)
        provider = template.template if isinstance(template, UtcpTool) else template
        assert isinstance(provider, LegacyCliProvider)
        as_data = provider.param_style in ("json", "json_stdin")  # values inside JSON text
        problems = legacy_problems(args, declared, policy.allow_utcp_options or as_data)
        if problems:
            raise ArgumentsError(
                [
                    Violation(pointer, f"`{name}` {why}", "legacy-flag")
                    for name, pointer, why in problems
                ]
            )
        try:
            words, stdin = legacy_arguments(provider.param_style, args, order)
        except ValueError as exc:
            raise ArgumentsError([Violation("", str(exc), "param-style")]) from None
        invocation = _legacy_invocation(plan, words, stdin, variables or {}, policy)
        checked = PreparedPlan(plan, {}, invocation.env, invocation.cwd)
        return PreparedCall.one_step(invocation, policy, checked)
    optional = (
        optional_arguments(template.inputs) if isinstance(template, UtcpTool) else frozenset()
    )
    rendered = render_arguments(plan.arguments, args, optional)
    return prepare_plan(plan, rendered, variables or {}, policy)


def prepare_plan(
    plan: Plan,
    arguments: Mapping[str, str],
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
) -> PreparedCall[PlanResult]:
    """A translated plan with its placeholders' text, checked as a whole: missing
    or oversized arguments, the environment (``variables`` substituted into its
    values), the working directory and every literal program. Raises before
    anything runs."""
    policy = policy or Policy()
    env, cwd = check_plan(plan, arguments, variables or {}, policy)
    return PreparedCall.for_plan(PreparedPlan(plan, arguments, env, cwd), policy)


def _legacy_invocation(
    plan: Plan,
    words: list[str],
    stdin: bytes | None,
    variables: Mapping[str, str],
    policy: Policy,
) -> Invocation:
    env = plan_environment(plan, variables, policy)
    # As a 1.x template and a handle: no working_dir runs in the Policy's workspace.
    cwd = resolve_directory(plan.working_dir or policy.workspace, "/working_dir")
    program = resolve_command(
        plan.legacy_command[0], cwd, policy, "/command_name", shown=plan.legacy_command[0]
    )
    argv = (program, *plan.legacy_command[1:], *words)
    problem = argv_problem(list(argv), env)
    if problem is not None:
        raise ArgumentsError([Violation("", problem, "size")])
    return Invocation(
        argv=argv,
        argv0=plan.legacy_command[0],
        env=env,
        stdin=stdin,
        cwd=cwd,
        timeout=policy.timeout if plan.timeout is None else min(policy.timeout, plan.timeout),
        max_output=policy.max_output,
        kill_grace=policy.kill_grace,
        handle_name=plan.name,
        no_new_privs=not policy.allow_setuid,
        limits=policy.child_limits,
        cgroup=policy.cgroup_per_call,
        policy=policy,
    )


async def run(
    source: Source,
    args: Mapping[str, Any] | None = None,
    *,
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
    executor: Executor | None = None,
) -> PlanResult:
    """Run a template and return every step's output and status (trio or asyncio).

    ``variables`` feeds ``${NAME}`` in ``env_vars``. Arguments are validated
    (against a tool's ``inputs``, and for every placeholder) before anything runs.
    """
    executor = executor or _executor(policy)
    return await executor.run(prepare(source, args, variables=variables, policy=executor.policy))


def run_sync(
    source: Source,
    args: Mapping[str, Any] | None = None,
    *,
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
    executor: Executor | None = None,
) -> PlanResult:
    """Blocking form of :func:`run`, for threads."""
    executor = executor or _executor(policy)
    prepared = prepare(source, args, variables=variables, policy=executor.policy)
    return executor.run_sync(prepared)


def _executor(policy: Policy | None) -> Executor:
    from ..executor import Executor

    return Executor(policy)


def output_value(plan: Plan, result: PlanResult) -> object:
    """What utcp-cli's ``call_tool`` returns for this output: the text, or the
    parsed JSON when it starts with ``{`` or ``[`` (a 0.x provider's rules for
    a legacy plan)."""
    if plan.mode == "legacy":
        if plan.output_format == "text":
            return result.output.strip()
        return legacy_value(result.output)
    return utcp_value(result.output)


def _value(prepared: PreparedCall[PlanResult], result: PlanResult) -> object:
    if result.timed_out:
        step = result.steps[-1].index if result.steps else 0
        raise CallTimeoutError(
            f"the call exceeded its {prepared.timeout:g} s timeout (in step {step})", result
        )
    return output_value(prepared_plan(prepared), result)


def prepared_plan(prepared: PreparedCall[PlanResult]) -> Plan:
    """The translated plan behind a prepared UTCP call (a 0.x provider's included)."""
    assert prepared.plan is not None
    return prepared.plan.plan


async def call(
    source: Source,
    args: Mapping[str, Any] | None = None,
    *,
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
    executor: Executor | None = None,
) -> object:
    """What utcp-cli's ``call_tool`` returns for the same template: the output text,
    or the parsed JSON when it starts with ``{`` or ``[`` (trio or asyncio).

    Raises a :class:`~command_handle.errors.HandleError` before anything runs when
    a check fails, and :class:`~command_handle.errors.CallTimeoutError` (a
    :class:`TimeoutError`, carrying the steps that ran) when ``policy.timeout``
    ends the call.
    """
    executor = executor or _executor(policy)
    prepared = prepare(source, args, variables=variables, policy=executor.policy)
    return _value(prepared, await executor.run(prepared))


def call_sync(
    source: Source,
    args: Mapping[str, Any] | None = None,
    *,
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
    executor: Executor | None = None,
) -> object:
    """Blocking form of :func:`call`, for threads."""
    executor = executor or _executor(policy)
    prepared = prepare(source, args, variables=variables, policy=executor.policy)
    return _value(prepared, executor.run_sync(prepared))


async def discover(
    source: Source,
    *,
    variables: Mapping[str, str] | None = None,
    policy: Policy | None = None,
    executor: Executor | None = None,
) -> UtcpManual:
    """Run a manual's discovery template and parse the UTCP manual it prints, as
    utcp-cli's ``register_manual`` does: the whole output as JSON, or JSON objects
    line by line. Raises :class:`UtcpLoadError` when no manual is found."""
    result = await run(source, {}, variables=variables, policy=policy, executor=executor)
    manual = manual_from_output(result.output)
    if manual is None:
        raise UtcpLoadError("the discovery commands printed no UTCP manual or tool")
    return manual


def _is_manual(data: object) -> bool:
    return isinstance(data, dict) and "utcp_version" in data and "tools" in data


def _tools_in(data: object) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        if isinstance(data.get("tools"), list):
            return [tool for tool in data["tools"] if isinstance(tool, dict)]
        if "name" in data and "description" in data:
            return [data]
    if isinstance(data, list):
        return [tool for tool in data if isinstance(tool, dict)]
    return []


def manual_from_output(output: str) -> UtcpManual | None:
    """A manual from discovery output, or None when it holds none."""
    try:
        data = json.loads(output.strip())
    except (json.JSONDecodeError, RecursionError):  # too deep to be a manual
        data = None
    else:
        if _is_manual(data):
            return _manual(data, lenient=True)
        tools = _tools_in(data)
        if tools:
            return _manual({"manual_version": "0.0.0", "tools": tools}, lenient=True)
    tools = []
    for line in output.split("\n"):
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if _is_manual(data):
            return _manual(data, lenient=True)
        tools += _tools_in(data)
    if tools:
        return _manual({"manual_version": "0.0.0", "tools": tools}, lenient=True)
    return None
