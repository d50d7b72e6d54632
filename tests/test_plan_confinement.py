"""What a plan's interpreter does to files itself (redirections, globs, the
call's TMPDIR) is confined as its children are, and never blocks the event
loop. Real processes, a real FIFO, the real sandbox backends."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
import trio

from command_handle import Executor, Policy, utcp
from command_handle.executor import PlanResult

from .processes import PY, python_handle

BACKENDS = ("landlock", "bubblewrap")


def template(*commands: str) -> dict[str, Any]:
    return {"call_template_type": "cli", "commands": [{"command": c} for c in commands]}


def run(entry: str, source: dict[str, Any], args: dict[str, Any], policy: Policy) -> PlanResult:
    """The plan through ``run_sync`` (an asyncio loop of its own) or under trio."""
    if entry == "sync":
        return utcp.run_sync(source, args, policy=policy)
    return trio.run(lambda: utcp.run(source, args, policy=policy))


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("SECRET-CANARY")
    (outside / "s1").write_text("")
    (workspace / "readable").write_text("readable text")
    return {"workspace": workspace, "outside": outside, "secret": outside / "secret"}


# -- redirections open what the call's child could open, and nothing else ------------


@pytest.mark.parametrize("entry", ["sync", "trio"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_redirection_opens_nothing_the_sandbox_denies(
    backend: str, entry: str, places: dict[str, Path], tmp_path: Path
) -> None:
    """The review's reproduction: ``cat < denied`` and ``echo x > outside`` ran in
    the application's unconfined thread while ``cat``/``touch`` were refused."""
    written = tmp_path / "written"
    source = template(
        "cat < UTCP_ARG_secret_UTCP_END; echo read=$?",
        "echo x > UTCP_ARG_out_UTCP_END; echo write=$?",
        "echo x >> UTCP_ARG_out_UTCP_END; echo append=$?",
        "ls &> UTCP_ARG_out_UTCP_END; echo both=$?",
        "echo in > UTCP_ARG_inside_UTCP_END/w && cat < UTCP_ARG_inside_UTCP_END/w",
        "cat < UTCP_ARG_inside_UTCP_END/readable; echo",
        'echo tmp > "$TMPDIR/t" && cat < "$TMPDIR/t"',
    )
    policy = Policy(
        sandbox="workspace-write",
        workspace=str(places["workspace"]),
        deny_read=(str(places["outside"]),),
        sandbox_backend=backend,
    )
    args = {
        "secret": str(places["secret"]),
        "out": str(written),
        "inside": str(places["workspace"]),
    }
    result = run(entry, source, args, policy)
    outputs = [step.text for step in result.steps]
    assert "SECRET-CANARY" not in result.output
    assert not written.exists()
    for index, name in enumerate(("read", "write", "append", "both")):
        assert outputs[index].endswith(f"{name}=1"), outputs
        assert "Permission denied" in outputs[index], outputs
    assert outputs[4:] == ["in", "readable text", "tmp"]
    assert (places["workspace"] / "w").read_text() == "in\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_redirection_cannot_follow_a_link_out_of_the_sandbox(
    backend: str, places: dict[str, Path], tmp_path: Path
) -> None:
    """A link inside the workspace (made by the plan's own child) leads outside:
    the redirection is refused as the child would be."""
    target = tmp_path / "target"
    target.write_text("untouched")
    workspace = places["workspace"]
    source = template(
        f"ln -s {target} {workspace}/out; ln -s {places['secret']} {workspace}/in",
        f"echo x > {workspace}/out; echo write=$?",
        f"cat < {workspace}/in; echo read=$?",
    )
    policy = Policy(
        sandbox="workspace-write",
        workspace=str(workspace),
        deny_read=(str(places["outside"]),),
        sandbox_backend=backend,
    )
    result = utcp.run_sync(source, {}, policy=policy)
    assert target.read_text() == "untouched"
    assert "SECRET-CANARY" not in result.output
    assert [step.text.rsplit("\n", 1)[-1] for step in result.steps[1:]] == ["write=1", "read=1"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_glob_lists_what_the_confined_child_would_list(
    backend: str, places: dict[str, Path]
) -> None:
    """Pathname expansion reads directories in the engine's process: it shows a
    denied directory's names only where the sandbox shows them to a child's
    ``ls``. Landlock hides contents, not names; bubblewrap mounts an empty
    tmpfs there, so the pattern matches nothing and stays as written, as in bash."""
    outside = places["outside"]
    source = template(f"cd {outside} && echo *", f"echo {outside}/s*", f"ls {outside}")
    policy = Policy(sandbox="read-only", deny_read=(str(outside),), sandbox_backend=backend)
    result = utcp.run_sync(source, {}, policy=policy)
    listed = {
        "landlock": ["s1 secret", f"{outside}/s1 {outside}/secret", "s1\nsecret"],
        "bubblewrap": ["*", f"{outside}/s*", ""],
    }
    assert [step.text for step in result.steps] == listed[backend]


def test_a_redirection_names_the_command_s_streams_not_the_engine_s(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The interpreter opens a target in the engine's process, where ``/dev/stderr``,
    ``/dev/fd/N``, ``/proc/self`` and ``/dev/tty`` would be the application's own.
    They mean the command's streams, as in bash, or are refused."""
    monkeypatch.setenv("ENGINE_SECRET", "ENVIRON-CANARY")
    source = template(
        "echo to-err > /dev/stderr; echo to-out > /dev/stdout; echo fd2 > /dev/fd/2; "
        "cat < /dev/stdin; echo fd7 > /dev/fd/7; echo $?",
        "cat < /proc/self/environ; echo environ=$?",
        "echo x > /proc/self/comm; echo comm=$?",
        "echo x > /dev/tty; echo tty=$?",
    )
    for policy in (Policy(), Policy(sandbox="read-only")):
        result = utcp.run_sync(source, {}, policy=policy)
        outputs = [step.text for step in result.steps]
        assert outputs[0] == (
            "to-err\nto-out\nfd2\ncommand-handle: /dev/fd/7: No such file or directory\n1"
        )
        assert "ENVIRON-CANARY" not in result.output
        assert outputs[1].endswith("environ=1") and outputs[2].endswith("comm=1")
        assert outputs[3].endswith("tty=1")
    assert "to-err" not in capfd.readouterr().err
    assert Path("/proc/self/comm").read_text().strip() != "x"


# -- a FIFO never blocks the loop ------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO with no reader or writer. Should an open block on it anyway, a
    thread opens its other end after 3 s, so the test fails instead of hanging."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    done = threading.Event()

    def release() -> None:
        if not done.wait(3.0):
            fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # frees readers and writers
            done.wait(5.0)
            os.close(fd)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    yield path
    done.set()
    thread.join()


async def _with_heartbeat(call: Callable[[], Awaitable[object]]) -> tuple[object, float, float]:
    """Run ``call`` while a task ticks every 10 ms: its result, how long it took,
    and the longest the ticking task waited between two ticks."""
    longest = 0.0
    finished = False

    async def heartbeat(*, task_status: anyio.abc.TaskStatus[None]) -> None:
        nonlocal longest
        last = time.monotonic()
        task_status.started()
        while not finished:
            await anyio.sleep(0.01)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    async with anyio.create_task_group() as group:
        await group.start(heartbeat)  # ticking before the call begins
        started = time.monotonic()
        try:
            value = await call()
        finally:
            finished = True
        took = time.monotonic() - started
    return value, took, longest


@pytest.mark.parametrize("sandbox", ["off", "read-only"])
@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_a_redirection_to_a_fifo_neither_blocks_nor_stalls_the_loop(
    loop: str, sandbox: str, fifo: Path
) -> None:
    """Unconfined the open runs on the loop's thread, confined on a spawner thread
    the call waits for: without O_NONBLOCK either would wait for a reader."""
    source = template(
        "echo x > UTCP_ARG_f_UTCP_END; echo write=$?",
        "cat < UTCP_ARG_f_UTCP_END; echo read=$?",
        "echo x >> UTCP_ARG_f_UTCP_END; echo append=$?",
    )
    policy = Policy(timeout=1, sandbox=sandbox)

    async def call() -> PlanResult:
        return await utcp.run(source, {"f": str(fifo)}, policy=policy)

    async def scenario() -> tuple[object, float, float]:
        return await _with_heartbeat(call)

    if loop == "trio":
        result, took, longest = trio.run(scenario)
    else:
        result, took, longest = asyncio.run(scenario())
    assert isinstance(result, PlanResult)
    assert took < 1.0 and longest < 0.5, (took, longest)
    assert not result.timed_out
    texts = [step.text for step in result.steps]
    assert [text.rsplit("\n", 1)[-1] for text in texts] == ["write=1", "read=1", "append=1"]
    assert f"command-handle: {fifo}: " in texts[1]


# -- the call's TMPDIR is removed off the loop -----------------------------------------

FILL_TMPDIR = (
    "import os\n"
    'd = os.environ["TMPDIR"]\n'
    "for i in range(60000):\n"
    "    os.close(os.open(os.path.join(d, str(i)), os.O_CREAT | os.O_WRONLY, 0o600))\n"
    "print(d)\n"
)


@pytest.mark.parametrize(("kind", "loop"), [("plan", "trio"), ("handle", "asyncio")])
def test_removing_a_large_tmpdir_does_not_stall_the_loop(kind: str, loop: str) -> None:
    """A confined call whose child left 60,000 files in its TMPDIR: removing them
    takes over a second, and the loop keeps running meanwhile."""
    executor = Executor(Policy(sandbox="read-only", timeout=60))

    async def call() -> str:
        if kind == "plan":
            result = await utcp.run(
                template(f"{PY} -c {_quoted(FILL_TMPDIR)}"), {}, executor=executor
            )
            return result.output
        return str((await executor.call(python_handle(FILL_TMPDIR))).stdout).strip()

    async def scenario() -> tuple[object, float, float]:
        return await _with_heartbeat(call)

    if loop == "trio":
        tmpdir, _, longest = trio.run(scenario)
    else:
        tmpdir, _, longest = asyncio.run(scenario())
    assert isinstance(tmpdir, str) and tmpdir.startswith("/")
    assert not os.path.exists(tmpdir)
    assert longest < 0.3, longest


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_a_builtin_writing_to_a_device_that_does_not_drain_keeps_the_loop_free() -> None:
    """``echo ... > /dev/pts/N`` with nobody reading the terminal: the write waits
    without blocking the event loop, and the call's timeout still ends it."""

    master, follower = os.openpty()
    try:
        terminal = os.ttyname(follower)
        chunk = "x" * 120_000
        template = {
            "call_template_type": "cli",
            "commands": [
                {
                    "command": "echo UTCP_ARG_a_UTCP_END UTCP_ARG_a_UTCP_END UTCP_ARG_a_UTCP_END"
                    " > UTCP_ARG_t_UTCP_END"
                }
            ],
        }
        executor = Executor(Policy(timeout=1))
        prepared = utcp.prepare(template, {"a": chunk, "t": terminal}, policy=executor.policy)
        gaps: list[float] = []

        async def main() -> bool:
            done = False

            async def heartbeat() -> None:
                last = time.monotonic()
                while not done:
                    await trio.sleep(0.01)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

            async with trio.open_nursery() as nursery:
                nursery.start_soon(heartbeat)
                result = await executor.run(prepared)
                done = True
            return result.timed_out

        started = time.monotonic()
        assert trio.run(main)
        assert time.monotonic() - started < 5
        assert max(gaps) < 0.5, max(gaps)
    finally:
        os.close(master)
        os.close(follower)
