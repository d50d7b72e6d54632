"""Running an argv plan with bash's semantics and no shell.

Steps share one :class:`ShellState` (directory, variables, exports), as the
UTCP documentation promises. Within a step, lists, pipelines, redirections
and command substitutions behave as bash runs them; builtins run in-process;
every other program is launched and supervised by the same code as a
handle's command (``_spawn``, ``_supervise``), in its own session, and its
process group is killed when it exits, times out or is cancelled. Each step's
stdout and stderr are merged, in order, into one capped buffer.

The concurrency inside a step (the elements of a pipeline) uses anyio, so a
plan runs natively under trio and under asyncio.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

import anyio
import anyio.lowlevel

from ..call import PlanResult, PreparedCall, StepResult
from ..errors import (
    AfterRunError,
    CommandError,
    EnvironmentVariableError,
    HandleError,
    OptionArgumentError,
)
from ..plan import (
    STEP_OUTPUT,
    Arg,
    Assignment,
    Command,
    Lit,
    Pipeline,
    Plan,
    Redirect,
    Sequence,
    Step,
    Subst,
    Tilde,
    Var,
    Word,
    sequence_uses_data,
    word_text,
)
from ..policy import (
    BASH_DEFAULT_PATH,
    Policy,
    check_program,
    check_variable_name,
    find_program,
    first_option_word,
)
from . import _bubblewrap as bubblewrap
from ._capture import Capture
from ._cgroup import CallCgroup
from ._drive import ChunkCallback, drive
from ._expand import Segment, join
from ._files import PlanFiles, files_for, stream_named
from ._ki import held
from ._landlock import SandboxProfile
from ._process import RESOURCE_ERRNOS, refusal, resource_error
from ._shell import BuiltinIO, ShellExit, ShellState
from ._spawn import Child, Spawner, launch, launch_async
from ._supervise import Output, supervise
from .builtins import BUILTINS, Builtin

__all__ = ["run_plan"]


# -- output targets ----------------------------------------------------------------


_Sink = Capture  # a step's merged output, or a substitution's


@dataclass(frozen=True)
class _Fd:
    """A descriptor someone else owns: a pipe end, an opened file, /dev/null.
    ``may_block`` is set for a pipeline's pipe and a device a redirection opened
    (a terminal nobody reads, say): a builtin writes those without blocking the
    event loop, waiting until they drain."""

    fd: int
    may_block: bool = False


_Target = _Sink | _Fd


async def _write(target: _Target, data: bytes) -> None:
    """Write all of ``data``. Raises OSError; a reader gone (EPIPE) ends the writing
    subshell with status 141, silently, as SIGPIPE ends it in bash."""
    if not data:
        return
    if isinstance(target, _Sink):
        target.write(data)
        return
    view = memoryview(data)
    try:
        if target.may_block:
            # Only this builtin holds this descriptor (our pipe end, or a device we
            # opened), so it can be made non-blocking while it writes: a full pipe
            # or a device that does not drain then waits without blocking the loop.
            os.set_blocking(target.fd, False)
            try:
                while view:
                    try:
                        view = view[os.write(target.fd, view) :]
                    except BlockingIOError:
                        await anyio.wait_writable(target.fd)
            finally:
                os.set_blocking(target.fd, True)
            return
        while view:
            view = view[os.write(target.fd, view) :]
    except BrokenPipeError:
        raise ShellExit(128 + signal.SIGPIPE) from None


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _release(fds: list[int]) -> None:
    """Close each descriptor once: the list is emptied, so a second call is harmless."""
    while fds:
        _close(fds.pop())


def _message(*parts: str) -> bytes:
    return ("command-handle: " + ": ".join(parts) + "\n").encode("utf-8", "surrogateescape")


def _open_flags(op: str) -> int:
    if op == "<":
        return os.O_RDONLY | os.O_CLOEXEC
    appending = op.endswith(">>")
    return os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if appending else os.O_TRUNC)


@dataclass
class _Words:
    """A command's words expanded into fields, with where each field came from."""

    texts: list[str] = field(default_factory=list)
    chosen_by_data: list[bool] = field(default_factory=list)  # its word depends on data
    led_by_data: list[bool] = field(default_factory=list)  # its first character is data


@dataclass
class _Assignments:
    """``NAME=value`` items expanded (None: a bare ``export NAME``); the names whose
    value depends on data."""

    values: list[tuple[str, str | None]] = field(default_factory=list)
    from_data: set[str] = field(default_factory=set)


class _BuiltinOutput:
    """A builtin's standard output. bash's builtins check their output when they
    return: the first write error is kept, and the builtin then fails."""

    def __init__(self, run: _PlanRun, target: _Target) -> None:
        self.run = run
        self.target = target
        self.error: OSError | None = None

    async def write(self, data: bytes) -> None:
        if self.error is None:
            try:
                await self.run.write(self.target, data)
            except OSError as exc:
                self.error = exc


class _Pipes:
    """The pipes through which a child writes into captures (the step's output, a
    substitution's): one per capture, however many of its streams go there."""

    def __init__(self) -> None:
        self.by_sink: dict[int, tuple[int, int, _Sink]] = {}

    def descriptor(self, target: _Target) -> int:
        if isinstance(target, _Fd):
            return target.fd
        entry = self.by_sink.get(id(target))
        if entry is None:
            read_end, write_end = os.pipe()
            entry = self.by_sink[id(target)] = (read_end, write_end, target)
        return entry[1]

    def close_write_ends(self) -> None:
        for _, write_end, _ in self.by_sink.values():
            _close(write_end)

    def close_read_ends(self) -> None:
        for read_end, _, _ in self.by_sink.values():
            _close(read_end)

    def outputs(self, step_sink: _Sink | None) -> list[Output]:
        # What goes to the step's own output is "stdout" to a streaming caller;
        # a substitution's output is internal.
        return [
            Output("stdout" if sink is step_sink else "internal", read_end, sink)
            for read_end, _, sink in self.by_sink.values()
        ]


# -- the run -----------------------------------------------------------------------


class _PlanRun:
    def __init__(
        self,
        plan: Plan,
        arguments: Mapping[str, str],
        policy: Policy,
        timeout: float,
        on_spawn: Callable[[], None],
        confined: Spawner | None = None,
        on_started: Callable[[int, str], None] | None = None,
    ) -> None:
        self.on_started = on_started
        self.on_chunk: ChunkCallback | None = None
        self.step_sink: _Sink | None = None
        self.confined = confined
        self.bubblewrap: tuple[SandboxProfile, str] | None = None
        self.files: PlanFiles = files_for(None, None, None)
        self.plan = plan
        self.timeout = timeout
        self.arguments = arguments
        self.policy = policy
        self.on_spawn = on_spawn
        self.devnull = -1
        self.subst_status: int | None = None
        self.launched = False
        self.step = 0

    async def run(self, state: ShellState) -> PlanResult:
        started = time.monotonic()
        results: list[StepResult] = []
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        timed_out = False
        current: tuple[Step, _Sink] | None = None
        try:
            with anyio.move_on_after(self.timeout) as deadline:
                for step in self.plan.steps:
                    self.step = step.index
                    sink = self.step_sink = _Sink(self.policy.max_output)
                    current = (step, sink)
                    stdin = _Fd(self.devnull)
                    try:
                        status = await self.enter(step, state, sink)
                        if status == 0:
                            status = await self.sequence(step.body, state, stdin, sink, sink)
                    except ShellExit as ended:  # each step is a subshell in utcp-cli
                        status = ended.status
                    state.status = status
                    results.append(self._step_result(step, sink, status))
                    current = None
                    value = bytes(sink.buffer).rstrip(b"\n").replace(b"\x00", b"")
                    output = value.decode("utf-8", "surrogateescape")
                    state.set(f"CMD_{step.index}_OUTPUT", output, data=True)
            if deadline.cancelled_caught:
                timed_out = True
                if current is not None:
                    results.append(self._step_result(current[0], current[1], 124))
        except HandleError as exc:
            if not self.launched:
                raise  # refused before anything ran: a plain refusal
            if current is not None:
                results.append(self._step_result(current[0], current[1], 126))
            ran = PlanResult(tuple(results), False, time.monotonic() - started)
            raise AfterRunError(exc, ran) from None
        finally:
            os.close(self.devnull)
        return PlanResult(tuple(results), timed_out, time.monotonic() - started)

    async def forward(self, name: str, chunk: bytes) -> None:
        """A child's chunk for the streaming caller: only the step's own output."""
        if name == "stdout" and self.on_chunk is not None:
            await self.on_chunk(name, chunk)

    async def write(self, target: _Target, data: bytes) -> None:
        """What a builtin (or a message of ours) writes; into the step's own output
        it reaches a streaming caller too, as a child's output does. Raises OSError."""
        await _write(target, data)
        if data and target is self.step_sink and self.on_chunk is not None:
            await self.on_chunk("stdout", data)

    async def note(self, target: _Target, data: bytes) -> None:
        """A message on a standard error: bash ignores a failure to write one."""
        with contextlib.suppress(OSError):
            await self.write(target, data)

    async def enter(self, step: Step, state: ShellState, sink: _Sink) -> int:
        """A step's own ``working_dir``: a ``cd`` before its commands (0 without one)."""
        if step.working_dir is None:
            return 0
        io = BuiltinIO(partial(self.note, sink), partial(self.note, sink))
        return await BUILTINS["cd"](state, [step.working_dir], io)

    @staticmethod
    def _step_result(step: Step, sink: _Sink, status: int) -> StepResult:
        return StepResult(step.index, bytes(sink.buffer), status, sink.truncated, step.append)

    async def sequence(
        self, sequence: Sequence, state: ShellState, stdin: _Fd, out: _Target, err: _Target
    ) -> int:
        if not sequence.pipelines:
            return 0  # an empty step
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
                async with anyio.create_task_group() as group:
                    for index, command in enumerate(commands):
                        last = index == len(pipes)
                        source = _Fd(pipes[index - 1][0], may_block=True) if index else stdin
                        sink: _Target = out if last else _Fd(pipes[index][1], may_block=True)
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
                            try:
                                statuses[index] = await self.command(
                                    command, state.copy(), streams, owned
                                )
                            except ShellExit as ended:
                                statuses[index] = ended.status

                        group.start_soon(one)
            except BaseExceptionGroup as grouped:
                # A refusal inside a pipeline comes out of its task group wrapped in a
                # group; the caller gets the refusal itself, as from a single command.
                raise _refusal_in(grouped) from None
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
            words = await self.expand_words(command.words, state, err)
            assignments = await self.expand_assignments(command.assignments, state, err)
            self.check_command(command, words, assignments, state)
            table = await self.redirect(command.redirects, state, list(streams), opened)
            if table is None:
                return 1
            return await self.dispatch(command, words, assignments, state, table, release)
        finally:
            release()

    async def expand_words(
        self, words: tuple[Word, ...], state: ShellState, err: _Target
    ) -> _Words:
        expanded = _Words()
        for word in words:
            segments = await self.segments(word, state, err)
            fields = await self.files.fields(segments, state.cwd)
            depends = any(segment.data for segment in segments)
            expanded.texts += [text for text, _ in fields]
            expanded.led_by_data += [lead for _, lead in fields]
            expanded.chosen_by_data += [depends] * len(fields)
        return expanded

    async def expand_assignments(
        self, assignments: tuple[Assignment, ...], state: ShellState, err: _Target
    ) -> _Assignments:
        expanded = _Assignments()
        for assignment in assignments:
            if assignment.value is None:
                expanded.values.append((assignment.name, None))
                continue
            segments = await self.segments(assignment.value, state, err)
            expanded.values.append((assignment.name, join(segments)))
            if any(segment.data for segment in segments):
                expanded.from_data.add(assignment.name)
        return expanded

    def check_command(
        self, command: Command, words: _Words, assignments: _Assignments, state: ShellState
    ) -> None:
        """The checks only the values can answer, before anything is opened or run."""
        if words.texts:
            self.check_data_words(words.texts, words.chosen_by_data, words.led_by_data, state)
        if not words.texts and command.kind != "export":
            return  # shell variables only: nothing reads them as options
        for name in assignments.from_data:
            if self.policy.refuses_model_value(name):
                raise EnvironmentVariableError(
                    f"{name} is read by programs as options or commands; a value from "
                    "a tool argument or a step's output may not set it "
                    "(Policy.allow_environment)",
                    self.where,
                )

    async def redirect(
        self,
        redirects: tuple[Redirect, ...],
        state: ShellState,
        table: list[_Target],
        opened: list[int],
    ) -> list[_Target] | None:
        """``table`` (stdin, stdout, stderr) with ``redirects`` applied in order; the
        files opened are added to ``opened``. None, after bash's message on the
        command's stderr, when a target cannot be used."""
        for redirect in redirects:
            if redirect.op in (">&", "<&"):
                table[redirect.fd] = table[int(word_text(redirect.target))]
                continue
            target = await self.redirect_target(redirect, state, table, opened)
            if target is None:
                return None
            if redirect.op in ("&>", "&>>"):
                table[1] = table[2] = target
            else:
                table[redirect.fd] = target
        return table

    async def redirect_target(
        self, redirect: Redirect, state: ShellState, table: list[_Target], opened: list[int]
    ) -> _Target | None:
        err = table[2]
        segments = await self.segments(redirect.target, state, err)
        targets = await self.files.fields(segments, state.cwd)
        if len(targets) != 1:
            await self.note(err, _message("ambiguous redirect"))
            return None
        name = targets[0][0]
        if name == os.devnull:  # the most common target: the run's own, nothing to open
            return _Fd(self.devnull)
        stream = stream_named(name)
        if stream is not None:  # the command's own descriptor, as bash reads the name
            if stream <= 2:
                return table[stream]
            await self.note(err, _message(name, os.strerror(errno.ENOENT)))
            return None
        try:
            fd = await self.files.open(os.path.join(state.cwd, name), _open_flags(redirect.op))
        except OSError as exc:
            await self.note(err, _message(name, exc.strerror or "cannot open"))
            return None
        opened.append(fd)
        return _Fd(fd, may_block=not stat.S_ISREG(os.fstat(fd).st_mode))

    async def dispatch(
        self,
        command: Command,
        words: _Words,
        assignments: _Assignments,
        state: ShellState,
        table: list[_Target],
        release: Callable[[], None],
    ) -> int:
        """Run the expanded, redirected command: ``export``, assignments alone, a
        builtin, or a program."""
        if command.kind == "export":
            return await self.export(assignments, state, table)
        if not words.texts:
            for name, text in assignments.values:
                state.set(name, text or "", data=name in assignments.from_data)
            return self.subst_status or 0
        builtin = BUILTINS.get(words.texts[0])
        if builtin is None:
            return await self.spawn(words.texts, assignments.values, state, table, release)
        return await self.builtin(builtin, words, state, table)

    async def export(
        self, assignments: _Assignments, state: ShellState, table: list[_Target]
    ) -> int:
        args = [name if text is None else f"{name}={text}" for name, text in assignments.values]
        io = BuiltinIO(partial(self.note, table[1]), partial(self.note, table[2]))
        status = await BUILTINS["export"](state, args, io)
        for name, text in assignments.values:
            if text is not None:
                state.set(name, text, export=True, data=name in assignments.from_data)
        return status

    async def builtin(
        self, builtin: Builtin, words: _Words, state: ShellState, table: list[_Target]
    ) -> int:
        name, args = words.texts[0], words.texts[1:]
        if name == "export":  # reached through a variable: names checked now
            for arg in args:
                check_variable_name(arg.partition("=")[0], self.policy, self.where)
        out = _BuiltinOutput(self, table[1])
        status = await builtin(state, args, BuiltinIO(out.write, partial(self.note, table[2])))
        if name == "cd":
            self.track_directory(args, words.led_by_data[1:], words.chosen_by_data[1:], state)
        if out.error is not None:
            reason = out.error.strerror or str(out.error)
            await self.note(table[2], f"{name}: write error: {reason}\n".encode(errors="replace"))
            return 1
        return status

    @property
    def where(self) -> str:
        return f"/commands/{self.step}/command"

    def check_data_words(
        self,
        words: list[str],
        chosen_by_data: list[bool],
        led_by_data: list[bool],
        state: ShellState,
    ) -> None:
        """Refuse, before the exec, a program chosen by data (red-team finding 8)
        and an argument that data begins with an option character (finding 12).
        The translator refused what it could see; this sees the values."""
        if chosen_by_data[0]:
            raise CommandError(
                "the program to run comes from a tool argument or a step's output "
                "(through a variable or a substitution)",
                self.where,
            )
        name = words[0]
        if "/" in name and not name.startswith("/") and "PWD" in state.tainted:
            raise CommandError(
                "a relative program is looked up in a directory chosen by a tool argument "
                "or a step's output",
                self.where,
            )
        if "/" not in name and "PATH" in state.tainted and self.policy.search_path is None:
            raise CommandError(
                "PATH was set from a tool argument or a step's output, so it would choose "
                "the program",
                self.where,
            )
        if self.policy.allow_utcp_options:
            return
        found = first_option_word(zip(words[1:], led_by_data[1:], strict=True))
        if found is not None:
            raise OptionArgumentError(None, "", found[1])

    @staticmethod
    def track_directory(
        args: list[str], leads: list[bool], chosen: list[bool], state: ShellState
    ) -> None:
        """After ``cd``: the directory is data's choice when its target was."""
        if any(chosen):
            state.tainted.add("PWD")
        elif args and args[-1].startswith("/"):
            state.tainted.discard("PWD")

    def resolve(self, name: str, state: ShellState) -> tuple[str | None, int, str]:
        """The program's path, or None with bash's status and message. Raises the
        policy's refusal for a program it does not allow (checked again here:
        a computed or relative program is only known now)."""
        search = self.policy.search_path
        if search is None:
            search = tuple(state.variables.get("PATH", os.defpath).split(os.pathsep))
        path = find_program(name, state.cwd, search)
        if path is None:
            return None, 127, "No such file or directory" if "/" in name else "command not found"
        if os.path.isdir(path):
            return None, 126, "Is a directory"
        if not os.access(path, os.X_OK):
            return None, 126, "Permission denied"
        if not os.path.isfile(path):
            return None, 126, "Permission denied"
        check_program(path, self.policy, f"/commands/{self.step}/command", shown=name)
        return path, 0, ""

    @held
    async def spawn(
        self,
        words: list[str],
        assignments: list[tuple[str, str | None]],
        state: ShellState,
        table: list[_Target],
        release: Callable[[], None],
    ) -> int:
        """Run a program and wait for it: its status, as bash gives it."""
        path, status, problem = self.resolve(words[0], state)
        if path is None:
            await self.note(table[2], _message(words[0], problem))
            return status
        env = state.environment()
        env.update((name, value or "") for name, value in assignments)
        pipes = _Pipes()
        await anyio.lowlevel.checkpoint_if_cancelled()  # nothing starts for a cancelled call
        try:
            child = await self.start(words, path, env, state, table, pipes, release)
        except BaseException:
            pipes.close_read_ends()
            raise
        if not isinstance(child, Child):
            pipes.close_read_ends()
            return child  # it could not start
        return await self.wait(child, path, pipes)

    async def start(
        self,
        words: list[str],
        path: str,
        env: dict[str, str],
        state: ShellState,
        table: list[_Target],
        pipes: _Pipes,
        release: Callable[[], None],
    ) -> Child | int:
        """Launch the program with ``table`` as its streams; or bash's status, after
        its message, when the system refuses."""
        cgroup = CallCgroup() if self.policy.cgroup_per_call else None
        try:
            fds = [pipes.descriptor(target) for target in table]
            self.on_spawn()
            argv, executable = self.program(words, path, state)
            child = await launch_async(
                partial(
                    launch,
                    argv,
                    executable=executable,
                    env=env,
                    cwd=state.cwd,
                    stdin=fds[0],
                    stdout=fds[1],
                    stderr=fds[2],
                    limits=self.policy.child_limits,
                    cgroup=cgroup,
                ),
                not self.policy.allow_setuid,
                self.confined,
            )
            self.launched = True  # a refusal from now on comes after a program ran
            return child
        except OSError as exc:
            if cgroup is not None:
                cgroup.discard()
            refused = refusal(exc)  # not the program's fault: no bash status
            if refused is not None:
                raise refused from None
            reason = errno.errorcode.get(exc.errno or 0, "error")
            # As bash reports it; a directory removed after the check is named.
            subject = state.cwd if exc.filename == state.cwd else words[0]
            await self.note(table[2], _message(subject, f"{exc.strerror or exc} ({reason})"))
            return 126 if exc.errno != errno.ENOENT else 127
        finally:
            pipes.close_write_ends()
            release()  # the child has its copies; ours would hold pipes open

    def program(self, words: list[str], path: str, state: ShellState) -> tuple[list[str], str]:
        """The argv and executable to launch: argv[0] as written, as bash passes it;
        under bubblewrap, bwrap starts the program inside its namespaces."""
        if self.bubblewrap is None:
            return words, path
        profile, tmpdir = self.bubblewrap
        wrapper = bubblewrap.prefix(profile, state.cwd, tmpdir)
        return [*wrapper, path, *words[1:]], wrapper[0]

    async def wait(self, child: Child, path: str, pipes: _Pipes) -> int:
        """Supervise the child until it exits; the supervisor owns the read ends
        from here, and closes them."""
        outputs = pipes.outputs(self.step_sink)
        if self.on_started is not None:
            try:
                self.on_started(child.pid, path)
            except BaseException:
                child.finish()
                for output in outputs:
                    _close(output.fd)
                raise
        streaming = self.on_chunk is not None
        supervisor = supervise(
            child, outputs, timeout=None, grace=self.policy.kill_grace, stream=streaming
        )
        outcome = await drive(supervisor, self.forward if streaming else None)
        code = outcome.returncode
        return code if code >= 0 else 128 - code

    # -- expansion -------------------------------------------------------------------

    async def segments(self, word: Word, state: ShellState, err: _Target) -> list[Segment]:
        out: list[Segment] = []
        for part in word:
            if isinstance(part, Lit):
                out.append(Segment(part.text, part.quoted))
            elif isinstance(part, Arg):
                out.append(Segment(self.arguments[part.name], True, data=True))
            elif isinstance(part, Tilde):
                home = state.variables.get("HOME") or os.path.expanduser("~")
                out.append(Segment(home, True, data="HOME" in state.tainted))
            elif isinstance(part, Var):
                out += await self.parameter(part, state, err)
            elif isinstance(part, Subst):
                data = sequence_uses_data(part.body, state.tainted)
                value = await self.substitute(part, state, err)
                out.append(Segment(value, part.quoted, split=not part.quoted, data=data))
        return out

    async def parameter(self, part: Var, state: ShellState, err: _Target) -> list[Segment]:
        """``$NAME`` and ``${NAME<op>word}``, as bash expands them."""
        name, op, variables = part.name, part.op, state.variables
        is_set = name == "?" or name in variables
        value = str(state.status) if name == "?" else variables.get(name, "")
        data = name in state.tainted or bool(STEP_OUTPUT.fullmatch(name))
        own = [Segment(value, part.quoted, split=not part.quoted, data=data)]
        if op is None:
            return own
        if op == "#":
            return [Segment(str(len(value)), part.quoted, split=not part.quoted, data=data)]
        empty = not is_set or (op.startswith(":") and value == "")
        if op in (":+", "+"):
            if empty:
                return [Segment("", True)] if part.quoted else []
            return await self.operand(part, state, err)
        if not empty:
            return own
        operand = await self.operand(part, state, err)
        if op in (":-", "-"):
            return operand
        text = join(operand)
        if op in (":=", "="):
            state.set(name, text, data=any(segment.data for segment in operand))
            return [Segment(text, part.quoted, split=not part.quoted, data=data)]
        # :? and ?: the message goes to stderr, and the step (or subshell) ends
        why = text or ("parameter null or not set" if op == ":?" else "parameter not set")
        await self.note(err, _message(name, why))
        raise ShellExit(1)

    async def operand(self, part: Var, state: ShellState, err: _Target) -> list[Segment]:
        """An operator's word: inside double quotes all of it is quoted; outside,
        its unquoted text splits into fields as an expansion's would."""
        segments = await self.segments(part.word, state, err)
        if part.quoted:
            return [Segment(s.text, True, data=s.data) for s in segments]
        return [
            s if s.quoted or s.split else Segment(s.text, False, split=True, data=s.data)
            for s in segments
        ]

    async def substitute(self, part: Subst, state: ShellState, err: _Target) -> str:
        sink = _Sink(self.policy.max_output)
        inner = state.copy()  # a subshell: its cd and variables stay inside
        try:
            status = await self.sequence(part.body, inner, _Fd(self.devnull), sink, err)
        except ShellExit as ended:
            status = ended.status
        self.subst_status = status
        state.status = status
        data = bytes(sink.buffer).rstrip(b"\n").replace(b"\x00", b"")
        return data.decode("utf-8", "surrogateescape")


async def run_plan(
    prepared: PreparedCall[PlanResult],
    env: dict[str, str],
    on_spawn: Callable[[], None],
    confined: Spawner | None = None,
    profile: SandboxProfile | None = None,
    on_started: Callable[[int, str], None] | None = None,
    on_chunk: ChunkCallback | None = None,
) -> PlanResult:
    """Run a prepared plan from ``env`` (its starting environment, with the
    call's TMPDIR when confined); ``confined`` is the sandbox profile's
    spawner, if any; ``on_started`` gets each child's pid and program once it
    runs; ``on_chunk`` gets what the programs write to the steps' output as it
    arrives, builtins' included."""
    checked = prepared.plan
    assert checked is not None
    cwd = checked.cwd
    state = ShellState(cwd, dict(env), set(env))
    state.set("PWD", cwd, export=True)
    if "PATH" not in env:
        # bash's built-in default when PATH is not inherited (a shell variable, not
        # exported), without its relative '.' entry.
        state.set("PATH", BASH_DEFAULT_PATH)
    try:
        run = _PlanRun(
            checked.plan,
            checked.arguments,
            prepared.policy,
            prepared.timeout,
            on_spawn,
            confined,
            on_started,
        )
        run.on_chunk = on_chunk
        if profile is not None and profile.backend == "bubblewrap":
            run.bubblewrap = (profile, env["TMPDIR"])
        # Redirections and globs happen where the sandbox holds (docs/sandbox.md).
        run.files = files_for(confined, profile, env.get("TMPDIR"))
        return await run.run(state)
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            raise resource_error(exc) from None
        raise


def _refusal_in(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """What a pipeline's task group raised, as a single command would raise it: the
    first refusal if it holds nothing else, the one exception if it holds one
    (a consumer's ``on_chunk`` or ``on_started`` that raised); else the group."""
    refusals, rest = group.split((HandleError, OSError))
    if rest is not None or refusals is None:
        leaves = _leaves(group)
        return leaves[0] if len(leaves) == 1 else group
    first: BaseException = refusals
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    if isinstance(first, OSError):
        return resource_error(first) if first.errno in RESOURCE_ERRNOS else group
    return first


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for inner in group.exceptions:
        found += _leaves(inner) if isinstance(inner, BaseExceptionGroup) else [inner]
    return found
