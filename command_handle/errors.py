"""The library's errors. A non-zero exit is a result, not an error.

One root, :class:`CommandHandleError`, for everything raised on purpose. Under
it, :class:`HandleError` is the refusal: it guarantees that nothing was
spawned for the call. :class:`AfterRunError` is the other kind: something
failed after a program had run, and it carries that result so nothing is lost.

Every error says what to fix and where: ``pointer`` is the JSON Pointer into the
handle (or, for argument errors, into the arguments). Messages never quote
environment values or argument values.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AfterRunError",
    "ArgumentsError",
    "ArgvTextError",
    "CallTimeoutError",
    "CommandError",
    "CommandHandleError",
    "DirectoryError",
    "EnvironmentVariableError",
    "HandleError",
    "HandleLoadError",
    "LaunchError",
    "OptionArgumentError",
    "PathArgumentError",
    "PolicyError",
    "PolicyTypeError",
    "ProcessError",
    "ProgramChangedError",
    "SandboxError",
    "TemplateEvaluationError",
    "TranslationError",
    "Violation",
]


class CommandHandleError(Exception):
    """The root of every error this library raises on purpose."""


class PolicyError(CommandHandleError, ValueError):
    """A :class:`~command_handle.Policy` was built with a value out of range."""


class PolicyTypeError(PolicyError, TypeError):
    """A :class:`~command_handle.Policy` field got a value of the wrong type."""


class HandleError(CommandHandleError):
    """The refusal: the call was refused and nothing was spawned for it."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.pointer = pointer

    def __str__(self) -> str:
        return f"{self.message} (at {self.pointer})" if self.pointer else self.message


class HandleLoadError(HandleError):
    """The Command Handle itself is invalid (unknown field, bad template, bad schema...)."""


@dataclass(frozen=True)
class Violation:
    """One way the arguments fail the handle's ``parameters`` schema."""

    pointer: str  # JSON Pointer into the arguments
    message: str
    keyword: str
    # For "required" and "additionalProperties": the property names concerned
    # (the pointer is then the object that holds them).
    names: tuple[str, ...] = ()


class ArgumentsError(HandleError):
    """The model's arguments do not satisfy ``parameters``; ``violations`` lists each one."""

    def __init__(self, violations: list[Violation], *, more: bool = False) -> None:
        lines = "; ".join(f"{v.pointer or '/'}: {v.message}" for v in violations)
        if more:
            lines += f"; and more (only the first {len(violations)} are listed)"
        self.more = more
        # The pointer is into the arguments: the first violation's location.
        super().__init__(
            f"the arguments do not match the parameters schema: {lines}",
            violations[0].pointer if violations else "",
        )
        self.violations = violations

    def __str__(self) -> str:
        return self.message


class OptionArgumentError(ArgumentsError):
    """A value from the model would reach the program as an option (CWE-88).

    ``parameter`` names the argument (None when no single one could be named),
    ``prefix`` is the character at fault. The message speaks to the model:
    "`file` must not start with '-'".
    """

    def __init__(self, parameter: str | None, pointer: str, prefix: str) -> None:
        why = f"must not start with {prefix!r}: the program would read it as an option"
        super().__init__([Violation(pointer, why, "option")])
        self.parameter = parameter
        self.prefix = prefix
        subject = f"`{parameter}`" if parameter else "a value from the arguments"
        self.message = f"{subject} {why}"

    def __str__(self) -> str:
        return f"{self.message} (at {self.pointer})" if self.pointer else self.message


class PathArgumentError(ArgumentsError):
    """A path argument leaves the root the handle keeps it in (``paths``), or
    does not exist when it must. The message speaks to the model:
    "`file` must be a path inside the workspace"."""

    def __init__(self, parameter: str, pointer: str, why: str) -> None:
        super().__init__([Violation(pointer, why, "path")])
        self.parameter = parameter
        self.message = f"`{parameter}` {why}"

    def __str__(self) -> str:
        return f"{self.message} (at {self.pointer})"


class TemplateEvaluationError(HandleError):
    """A handle field could not be evaluated against these arguments.

    ``form_error`` is the underlying Tool Form error (for example an
    :class:`~command_handle.args.ArgsError` naming the refused token).
    """

    form_error: Exception | None = None


class ArgvTextError(TemplateEvaluationError):
    """The rendered argv cannot be passed to a program: a token with no byte form
    (a NUL) or an argv too large for execve (E2BIG); ``index`` is the token's
    place in argv, None when the whole is too large."""

    def __init__(self, message: str, pointer: str, index: int | None) -> None:
        super().__init__(message, pointer)
        self.index = index


class CommandError(HandleError):
    """The command cannot be run: not found, not executable, refused by the policy."""


class ProgramChangedError(CommandError):
    """The program file is not the one the call was described (and approved)
    with: a link was retargeted, or the file replaced or rewritten, between the
    description and the launch. Nothing ran."""


class DirectoryError(HandleError):
    """The working directory does not exist, is not a directory, or is not searchable."""


class EnvironmentVariableError(HandleError):
    """An environment variable has an invalid or refused name or value."""


class SandboxError(HandleError):
    """The policy asks for a sandbox this kernel cannot enforce, or it could not
    be applied; nothing ran. The message says what is missing
    (``command-handle sandbox check``)."""


class LaunchError(HandleError):
    """The operating system refused to start the program (for example EMFILE or ENOEXEC).

    One case breaks the rule that nothing was spawned: the program started,
    but what it needs to be supervised was refused (a descriptor to watch it,
    a resource limit). It was then killed with its process group and reaped
    before this was raised, and the message says so."""


class TranslationError(HandleError):
    """A UTCP command uses shell syntax that is not translated; nothing ran.

    ``step`` is the index of the command in the template, ``line`` and
    ``column`` (both from 1) locate the construct in that command's text,
    and ``construct`` names it.
    """

    def __init__(
        self, message: str, *, step: int, source: str, offset: int, construct: str
    ) -> None:
        before = source[:offset]
        self.step = step
        self.line = before.count("\n") + 1
        self.column = offset - (before.rfind("\n") + 1) + 1
        self.offset = offset
        self.construct = construct
        where = f"step {step}, " + (f"line {self.line}, " if self.line > 1 else "")
        super().__init__(f"{where}column {self.column}: {message}", f"/commands/{step}/command")


class AfterRunError(CommandHandleError):
    """A failure after a program ran: a ``result`` template that failed, or a later
    step of a plan that was refused at run time. ``result`` is what ran (a
    :class:`~command_handle.CommandResult` or a plan result), ``error`` the
    refusal or evaluation error, ``pointer`` where it is."""

    def __init__(self, error: HandleError, result: object) -> None:
        super().__init__(str(error))
        self.error = error
        self.result = result
        self.message = error.message
        self.pointer = error.pointer

    def __str__(self) -> str:
        return f"after the program ran: {self.error}"


class CallTimeoutError(CommandHandleError, TimeoutError):
    """A call whose caller asked for a value (``utcp.call``) ran out of time.
    ``result`` holds what ran until then."""

    def __init__(self, message: str, result: object) -> None:
        super().__init__(message)
        self.message = message
        self.result = result


class ProcessError(CommandHandleError):
    """An action on a process that outlives its call was refused: an unknown or
    foreign id, input to a closed stdin or to a process that has ended, a limit
    on processes reached. ``message`` says what happened and what to do, in
    words a model can act on; nothing was started or written."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
