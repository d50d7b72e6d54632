"""Running an argv plan with bash's semantics and no shell.

Steps share one :class:`ShellState` (directory, variables, exports), as the
UTCP documentation promises. Within a step, lists, pipelines, redirections
and command substitutions behave as bash runs them; builtins run in-process;
every other program is spawned by argv through trio, in its own session, and
its process group is killed when it exits, times out or is cancelled.
Each step's stdout and stderr are merged, in order, into one capped buffer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import trio

from .._ostext import os_text_problem
from ..errors import (
    ArgumentsError,
    CommandError,
    EnvironmentVariableError,
    HandleError,
    Violation,
)
from ..plan import (
    Arg,
    Command,
    Lit,
    Pipeline,
    Plan,
    Sequence,
    Step,
    Subst,
    Tilde,
    Var,
    Word,
    iter_commands,
    substitute_variables,
    word_is_static,
    word_text,
)
from ..policy import Policy
from ._expand import Segment, fields, join
from ._process import _READ_SIZE, RESOURCE_ERRNOS, _signal_group, _terminate, resource_error
from ._shell import BuiltinIO, ShellState
from .builtins import BUILTINS

__all__ = [
    "BASH_DEFAULT_PATH",
    "PlanResult",
    "StepResult",
    "check_plan",
    "plan_environment",
    "run_plan",
]

BASH_DEFAULT_PATH = "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"

_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class StepResult:
    """One step: its merged output as captured, its exit status, and whether the
    output was cut at the policy's ``max_output``."""

    index: int
    output: bytes
    status: int
    truncated: bool
    appended: bool

    @property
    def text(self) -> str:
        """The output as ``$(...)`` gives it: trailing newlines removed, UTF-8 decoded."""
        return self.output.rstrip(b"\n").decode("utf-8", "replace")

    def to_json(self) -> dict[str, object]:
        return {
            "index": self.index,
            "output": self.text,
            "status": self.status,
            "truncated": self.truncated,
            "append_to_final_output": self.appended,
        }


@dataclass(frozen=True)
class PlanResult:
    """What the steps did. ``output`` joins the appended steps' outputs by newlines
    and strips the ends, as utcp-cli does. ``timed_out`` means the policy's timeout
    stopped the plan; ``steps`` then ends with the step that was running."""

    steps: tuple[StepResult, ...]
    timed_out: bool
    duration_s: float

    @property
    def output(self) -> str:
        joined = b"\n".join(step.output.rstrip(b"\n") for step in self.steps if step.appended)
        return joined.decode("utf-8", "replace").strip()

    def to_json(self) -> dict[str, object]:
        return {
            "output": self.output,
            "steps": [step.to_json() for step in self.steps],
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 6),
        }


# -- checks before anything runs ------------------------------------------------


def plan_environment(plan: Plan, variables: Mapping[str, str], policy: Policy) -> dict[str, str]:
    """The starting environment: inherited host names, then the plan's values with
    the caller's variables substituted. Raises before anything runs."""
    env = {name: os.environ[name] for name in plan.environment.inherit if name in os.environ}
    for name, template in plan.environment.set:
        where = f"/env_vars/{name}"
        if not name or not set(name) <= _ENV_NAME_CHARS or name[0].isdigit():
            raise EnvironmentVariableError(
                f"{name!r} is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
                where,
            )
        if policy.refuses_variable(name):
            raise EnvironmentVariableError(
                f"{name} can make a loader or interpreter run code; the policy does not allow "
                "templates to set it (Policy.allow_environment)",
                where,
            )
        value, missing = substitute_variables(template, variables, plan.name)
        if missing:
            raise EnvironmentVariableError(
                f"env_vars/{name} refers to the variable {missing[0]!r}, which is not in the "
                "variables given to the call",
                where,
            )
        problem = os_text_problem(value)
        if problem:
            raise EnvironmentVariableError(f"the value of {name} {problem}", where)
        env[name] = value
    return env


def check_plan(plan: Plan, arguments: Mapping[str, str], policy: Policy) -> None:
    """Refuse, before anything runs, what the policy forbids or the call lacks."""
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
    for step, command in iter_commands(plan):
        where = f"/commands/{step}/command"
        for assignment in command.assignments:
            if policy.refuses_variable(assignment.name):
                raise EnvironmentVariableError(
                    f"{assignment.name} can make a loader, interpreter or the shell run code; "
                    "the policy does not allow templates to set it (Policy.allow_environment)",
                    where,
                )
        if policy.allowed_commands is None or not command.words:
            continue
        first = command.words[0]
        if not word_is_static(first):
            raise CommandError(
                "the policy lists the allowed commands, so the program must be written "
                "literally, not computed",
                where,
            )
        name = word_text(first)
        if (
            name not in BUILTINS
            and os.path.basename(name) not in policy.allowed_commands
            and (name not in policy.allowed_commands)
        ):
            raise CommandError(f"the policy does not allow the command {name!r}", where)


# -- output targets ----------------------------------------------------------------


class _Sink:
    """Captured output: bytes in arrival order, up to ``limit``."""

    __slots__ = ("buffer", "limit", "truncated")

    def __init__(self, limit: int) -> None:
        self.buffer = bytearray()
        self.limit = limit
        self.truncated = False

    def write(self, data: bytes) -> None:
        room = self.limit - len(self.buffer)
        if room > 0:
            self.buffer += data[:room]
        if len(data) > room:
            self.truncated = True


@dataclass(frozen=True)
class _Fd:
    """A descriptor someone else owns: a pipe end, an opened file, /dev/null."""

    fd: int


_Target = _Sink | _Fd


async def _write(target: _Target, data: bytes) -> None:
    if not data:
        return
    if isinstance(target, _Sink):
        target.write(data)
        return
    try:
        if stat.S_ISFIFO(os.fstat(target.fd).st_mode):
            # Only this builtin holds this pipe end, so it can be made non-blocking.
            stream = trio.lowlevel.FdStream(os.dup(target.fd))
            try:
                await stream.send_all(data)
            finally:
                await stream.aclose()
            return
        view = memoryview(data)
        while view:
            view = view[os.write(target.fd, view) :]
    except (OSError, trio.BrokenResourceError):
        pass  # the reader went away, as SIGPIPE would end a writer in bash


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _release(fds: list[int]) -> None:
    """Close each descriptor once: the list is emptied, so a second call is harmless."""
    while fds:
        _close(fds.pop())


def _message(*parts: str) -> bytes:
    return ("command-handle: " + ": ".join(parts) + "\n").encode("utf-8", "surrogateescape")


# -- the run -----------------------------------------------------------------------


class _PlanRun:
    def __init__(
        self,
        plan: Plan,
        arguments: Mapping[str, str],
        policy: Policy,
        on_spawn: Callable[[], None],
    ) -> None:
        self.plan = plan
        self.arguments = arguments
        self.policy = policy
        self.on_spawn = on_spawn
        self.devnull = -1
        self.subst_status: int | None = None

    async def run(self, state: ShellState) -> PlanResult:
        started = time.monotonic()
        results: list[StepResult] = []
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        timed_out = False
        current: tuple[Step, _Sink] | None = None
        try:
            with trio.move_on_after(self.policy.timeout) as deadline:
                for step in self.plan.steps:
                    sink = _Sink(self.policy.max_output)
                    current = (step, sink)
                    status = await self.sequence(step.body, state, _Fd(self.devnull), sink, sink)
                    state.status = status
                    results.append(self._step_result(step, sink, status))
                    current = None
                    value = bytes(sink.buffer).rstrip(b"\n").replace(b"\x00", b"")
                    state.set(f"CMD_{step.index}_OUTPUT", value.decode("utf-8", "surrogateescape"))
            if deadline.cancelled_caught:
                timed_out = True
                if current is not None:
                    results.append(self._step_result(current[0], current[1], 124))
        finally:
            os.close(self.devnull)
        return PlanResult(tuple(results), timed_out, time.monotonic() - started)

    @staticmethod
    def _step_result(step: Step, sink: _Sink, status: int) -> StepResult:
        return StepResult(step.index, bytes(sink.buffer), status, sink.truncated, step.append)

    async def sequence(
        self, sequence: Sequence, state: ShellState, stdin: _Fd, out: _Target, err: _Target
    ) -> int:
        status = state.status
        for index, pipeline in enumerate(sequence.pipelines):
            if index:
                operator = sequence.operators[index - 1]
                if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
                    continue
            status = await self.pipeline(pipeline, state, stdin, out, err)
            state.status = status
        return status

    async def pipeline(
        self, pipeline: Pipeline, state: ShellState, stdin: _Fd, out: _Target, err: _Target
    ) -> int:
        commands = pipeline.commands
        if len(commands) == 1:
            status = await self.command(commands[0], state, (stdin, out, err), [])
        else:
            statuses = [0] * len(commands)
            pipes: list[tuple[int, int]] = []
            owners: list[list[int]] = []  # the pipe ends each command closes when done
            assigned: set[int] = set()
            try:
                for _ in commands[1:]:
                    pipes.append(os.pipe())
                async with trio.open_nursery() as nursery:
                    for index, command in enumerate(commands):
                        last = index == len(pipes)
                        source = _Fd(pipes[index - 1][0]) if index else stdin
                        sink: _Target = out if last else _Fd(pipes[index][1])
                        errors = sink if not last and pipeline.stderr_piped[index] else err
                        owned = [pipes[index - 1][0]] if index else []
                        if not last:
                            owned.append(pipes[index][1])
                        owners.append(owned)
                        assigned.update(owned)

                        async def one(
                            index: int = index,
                            command: Command = command,
                            streams: tuple[_Fd, _Target, _Target] = (source, sink, errors),
                            owned: list[int] = owned,
                        ) -> None:
                            # Each element of a pipeline runs in a subshell, as in bash.
                            statuses[index] = await self.command(
                                command, state.copy(), streams, owned
                            )

                        nursery.start_soon(one)
            finally:
                for pair in pipes:
                    for fd in pair:
                        if fd not in assigned:
                            _close(fd)  # created but never handed to a command
                for owned in owners:
                    _release(owned)
            status = statuses[-1]
        if pipeline.negated:
            status = 0 if status else 1
        return status

    # -- one command ---------------------------------------------------------------

    async def command(
        self,
        command: Command,
        state: ShellState,
        streams: tuple[_Fd, _Target, _Target],
        owned: list[int],
    ) -> int:
        """Run one command with ``streams`` as its stdin, stdout and stderr.
        ``owned`` descriptors are closed (and the list emptied) once the command
        no longer needs them, so a pipe's other end sees end-of-file."""
        opened: list[int] = []

        def release() -> None:
            _release(owned)
            _release(opened)

        try:
            self.subst_status = None
            err = streams[2]
            words: list[str] = []
            for word in command.words:
                words += fields(await self.segments(word, state, err), state.cwd)
            assignments: list[tuple[str, str | None]] = []
            for assignment in command.assignments:
                value = assignment.value
                text = None if value is None else join(await self.segments(value, state, err))
                assignments.append((assignment.name, text))
            table: list[_Target] = list(streams)
            for redirect in command.redirects:
                if redirect.op in (">&", "<&"):
                    table[redirect.fd] = table[int(word_text(redirect.target))]
                    continue
                targets = fields(await self.segments(redirect.target, state, err), state.cwd)
                if len(targets) != 1:
                    await _write(table[2], _message("ambiguous redirect"))
                    return 1
                flags = os.O_CLOEXEC | (
                    os.O_RDONLY
                    if redirect.op == "<"
                    else os.O_WRONLY
                    | os.O_CREAT
                    | (os.O_APPEND if redirect.op.endswith(">>") else os.O_TRUNC)
                )
                try:
                    fd = os.open(os.path.join(state.cwd, targets[0]), flags, 0o666)
                except OSError as exc:
                    await _write(table[2], _message(targets[0], exc.strerror or "cannot open"))
                    return 1
                opened.append(fd)
                if redirect.op in ("&>", "&>>"):
                    table[1] = table[2] = _Fd(fd)
                else:
                    table[redirect.fd] = _Fd(fd)
            io = BuiltinIO(lambda data: _write(table[1], data), lambda data: _write(table[2], data))
            if command.kind == "export":
                args = [name if value is None else f"{name}={value}" for name, value in assignments]
                return await BUILTINS["export"](state, args, io)
            if not words:
                for name, text in assignments:
                    state.set(name, text or "")
                return self.subst_status or 0
            builtin = BUILTINS.get(words[0])
            if builtin is not None:
                return await builtin(state, words[1:], io)
            return await self.spawn(words, assignments, state, table, release)
        finally:
            release()

    def resolve(self, name: str, state: ShellState) -> tuple[str | None, int, str]:
        """The program's path, or None with bash's status and message."""
        if "/" in name:
            path = os.path.normpath(os.path.join(state.cwd, name))
            if not os.path.exists(path):
                return None, 127, "No such file or directory"
            if os.path.isdir(path):
                return None, 126, "Is a directory"
            if not os.access(path, os.X_OK):
                return None, 126, "Permission denied"
        else:
            entries = self.policy.search_path
            if entries is None:
                entries = tuple(state.variables.get("PATH", os.defpath).split(os.pathsep))
            for entry in entries:
                # Relative entries would make the lookup depend on the directory: skipped.
                candidate = os.path.join(entry, name)
                if (
                    os.path.isabs(entry)
                    and os.path.isfile(candidate)
                    and os.access(candidate, os.X_OK)
                ):
                    path = candidate
                    break
            else:
                return None, 127, "command not found"
        info = os.stat(path)
        if info.st_mode & (stat.S_ISUID | stat.S_ISGID) and not self.policy.allow_setuid:
            raise CommandError(
                f"the command {name!r} is set-user-ID or set-group-ID; the policy does not allow it"
            )
        allowed = self.policy.allowed_commands
        if allowed is not None and path not in allowed and os.path.basename(path) not in allowed:
            raise CommandError(f"the policy does not allow the command {name!r}")
        return path, 0, ""

    async def spawn(
        self,
        words: list[str],
        assignments: list[tuple[str, str | None]],
        state: ShellState,
        table: list[_Target],
        release: Callable[[], None],
    ) -> int:
        path, status, problem = self.resolve(words[0], state)
        if path is None:
            await _write(table[2], _message(words[0], problem))
            return status
        env = state.environment()
        env.update((name, value or "") for name, value in assignments)
        pipes: dict[int, tuple[int, int, _Sink]] = {}

        def descriptor(target: _Target) -> int:
            if isinstance(target, _Fd):
                return target.fd
            if id(target) not in pipes:
                read_end, write_end = os.pipe()
                pipes[id(target)] = (read_end, write_end, target)
            return pipes[id(target)][1]

        await trio.lowlevel.checkpoint_if_cancelled()  # nothing starts for a cancelled call
        try:
            try:
                fds = [descriptor(target) for target in table]
                self.on_spawn()
                process = await trio.lowlevel.open_process(
                    words,  # argv[0] as written, as bash passes it
                    executable=path,
                    stdin=fds[0],
                    stdout=fds[1],
                    stderr=fds[2],
                    cwd=state.cwd,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                if exc.errno in RESOURCE_ERRNOS:
                    raise resource_error(exc) from None
                reason = errno.errorcode.get(exc.errno or 0, "error")
                # As bash reports it; a directory removed after the check is named.
                subject = state.cwd if exc.filename == state.cwd else words[0]
                await _write(table[2], _message(subject, f"{exc.strerror or exc} ({reason})"))
                return 126 if exc.errno != errno.ENOENT else 127
            finally:
                for _, write_end, _ in pipes.values():
                    _close(write_end)
                release()  # the child has its copies; ours would hold pipes open
            return await self._wait(process, [(r, sink) for r, _, sink in pipes.values()])
        finally:
            for read_end, _, _ in pipes.values():
                with contextlib.suppress(OSError):
                    os.close(read_end)
            pipes.clear()

    async def _wait(self, process: trio.Process, readers: list[tuple[int, _Sink]]) -> int:
        grace = self.policy.kill_grace
        try:
            async with trio.open_nursery() as nursery:
                remaining = len(readers)
                drained = trio.Event()
                if not remaining:
                    drained.set()
                for read_end, sink in readers:

                    async def drain(read_end: int = read_end, sink: _Sink = sink) -> None:
                        nonlocal remaining
                        stream = trio.lowlevel.FdStream(os.dup(read_end))
                        try:
                            while chunk := await stream.receive_some(_READ_SIZE):
                                sink.write(chunk)
                        except (trio.ClosedResourceError, trio.BrokenResourceError):
                            pass
                        finally:
                            with trio.CancelScope(shield=True):
                                await stream.aclose()
                            remaining -= 1
                            if not remaining:
                                drained.set()

                    nursery.start_soon(drain)
                await process.wait()
                # Nothing the program left behind in its group outlives it.
                _signal_group(process.pid, signal.SIGKILL)
                with trio.move_on_after(grace):
                    await drained.wait()
                nursery.cancel_scope.cancel()  # a descendant that left the group keeps a pipe
        finally:
            with trio.CancelScope(shield=True):
                await _terminate(process, grace)
        code = process.returncode
        assert code is not None
        return code if code >= 0 else 128 - code

    # -- expansion -------------------------------------------------------------------

    async def segments(self, word: Word, state: ShellState, err: _Target) -> list[Segment]:
        out: list[Segment] = []
        for part in word:
            if isinstance(part, Lit):
                out.append(Segment(part.text, part.quoted))
            elif isinstance(part, Arg):
                out.append(Segment(self.arguments[part.name], True))
            elif isinstance(part, Tilde):
                out.append(Segment(state.variables.get("HOME") or os.path.expanduser("~"), True))
            elif isinstance(part, Var):
                variables = state.variables
                value = str(state.status) if part.name == "?" else variables.get(part.name, "")
                out.append(Segment(value, part.quoted, split=not part.quoted))
            elif isinstance(part, Subst):
                value = await self.substitute(part, state, err)
                out.append(Segment(value, part.quoted, split=not part.quoted))
        return out

    async def substitute(self, part: Subst, state: ShellState, err: _Target) -> str:
        sink = _Sink(self.policy.max_output)
        inner = state.copy()  # a subshell: its cd and variables stay inside
        status = await self.sequence(part.body, inner, _Fd(self.devnull), sink, err)
        self.subst_status = status
        state.status = status
        data = bytes(sink.buffer).rstrip(b"\n").replace(b"\x00", b"")
        return data.decode("utf-8", "surrogateescape")


async def run_plan(
    plan: Plan,
    arguments: Mapping[str, str],
    env: dict[str, str],
    cwd: str,
    policy: Policy,
    on_spawn: Callable[[], None],
) -> PlanResult:
    """Run a checked utcp-mode plan (see :func:`check_plan`) from ``cwd`` with ``env``."""
    state = ShellState(cwd, dict(env), set(env))
    state.set("PWD", cwd, export=True)
    if "PATH" not in env:
        # bash's built-in default when PATH is not inherited (a shell variable, not
        # exported), without its relative '.' entry.
        state.set("PATH", BASH_DEFAULT_PATH)
    try:
        return await _PlanRun(plan, arguments, policy, on_spawn).run(state)
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            raise resource_error(exc) from None
        raise
    except BaseExceptionGroup as group:
        # A refusal inside a pipeline comes out of its nursery wrapped in a group;
        # the caller gets the refusal itself, as from a single command.
        raise _refusal_in(group) from None


def _refusal_in(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first refusal in ``group`` if it holds nothing else; otherwise the group."""
    refusals, rest = group.split((HandleError, OSError))
    if rest is not None or refusals is None:
        return group
    first: BaseException = refusals
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    if isinstance(first, OSError):
        return resource_error(first) if first.errno in RESOURCE_ERRNOS else group
    return first
