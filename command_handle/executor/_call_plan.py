"""What a call will do, as plain JSON, and its hash: what an approver sees and signs.

The description holds everything that decides what runs and under which
limits: the program and the identity of its file (real path, inode, times,
content digest), argv, the environment (credential values masked), the
working directory, stdin's size and digest, the stream modes, the limits and
the sandbox profile. Describing a call remembers that identity on it, and the
launch is refused if the file changed since. It leaves out what changes from
run to run without changing what runs (the per-call temporary directory). Two renderings of the
same call under the same policy give the same hash, so a hash approved from
``command-handle render`` can be required by ``run --expect-plan``.
"""

from __future__ import annotations

import hashlib
import resource
from typing import Any

from ..call import Invocation, PreparedCall
from ..policy import Policy, program_identity
from ._sandbox import profile_for

__all__ = ["describe"]

_RLIMIT_NAMES = {
    getattr(resource, name): name.removeprefix("RLIMIT_").lower()
    for name in dir(resource)
    if name.startswith("RLIMIT_")
}


def _sandbox(policy: Policy) -> dict[str, Any] | None:
    profile = profile_for(policy)  # raises SandboxError when it cannot be enforced
    if profile is None:
        return None
    return {
        "mode": profile.mode,
        "backend": profile.backend,
        "writable": [path for path in profile.writable if path != profile.tmp_root],
        "deny_read": list(profile.deny_read),
        "network": profile.network,
    }


def _limits(policy: Policy, timeout: float, max_output: int) -> dict[str, Any]:
    limits = {
        "timeout": timeout,
        "max_output": max_output,
        "kill_grace": policy.kill_grace,
        "no_new_privs": not policy.allow_setuid,
        "cgroup": policy.cgroup_per_call,
        "rlimits": {
            _RLIMIT_NAMES.get(kind, str(kind)): value for kind, value in policy.child_limits
        },
    }
    if policy.keep_capabilities:  # only then: the plans approved before still hash alike
        limits["keep_capabilities"] = True
    return limits


def _text(value: str) -> str:
    """``value`` as valid Unicode: bytes the OS gave undecoded show as ``\\xNN``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raw = value.encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "backslashreplace")
    return value


def describe(prepared: PreparedCall[Any]) -> dict[str, Any]:
    """The plan of a prepared call, with its effective limits: what an approval
    hook, ``render`` and a preview show, and what the plan hash covers."""
    if prepared.invocation is not None:
        return _describe_command(prepared.invocation, prepared)
    return _describe_plan(prepared)


def _describe_command(invocation: Invocation, prepared: PreparedCall[Any]) -> dict[str, Any]:
    """The plan of one command; the prepared call keeps the program file's identity."""
    program_file = program_identity(invocation.argv[0])
    prepared.remember_program_file(program_file)
    stdin: dict[str, Any] | None = None
    if invocation.stdin is not None:
        stdin = {"bytes": len(invocation.stdin)}
        shown = invocation.shown_stdin()  # the credential masked: never a digest of a secret
        if shown is not None:
            stdin["sha256"] = hashlib.sha256(shown).hexdigest()
    # What the program sees as its argv[0], when not its path (a busybox-style
    # program dispatches on it).
    argv0 = invocation.argv0 if invocation.argv0 != invocation.argv[0] else None
    return {
        "kind": "command",
        "tool": invocation.handle_name,
        "program": _text(invocation.argv[0]),
        "program_file": {**program_file, "path": _text(program_file["path"])},
        "argv": [_text(token) for token in invocation.argv],
        **({} if argv0 is None else {"argv0": _text(argv0)}),
        "environment": {_text(k): _text(v) for k, v in invocation.shown_environment().items()},
        "cwd": _text(invocation.cwd),
        "stdin": stdin,
        "stdout": invocation.stdout,
        "stderr": invocation.stderr,
        "encoding": invocation.encoding,
        "limits": _limits(prepared.policy, prepared.timeout, prepared.max_output),
        "sandbox": _sandbox(prepared.policy),
    }


def _describe_plan(prepared: PreparedCall[Any]) -> dict[str, Any]:
    """The plan of a translated UTCP template: its commands as written, the text
    of each placeholder, and what the steps start from."""
    checked = prepared.plan
    assert checked is not None
    return {
        "kind": "plan",
        "tool": checked.plan.name,
        "steps": [step.source for step in checked.plan.steps],
        "arguments": {k: _text(v) for k, v in checked.arguments.items()},
        "environment": {_text(k): _text(v) for k, v in checked.env.items()},
        "cwd": _text(checked.cwd),
        "limits": _limits(prepared.policy, prepared.timeout, prepared.max_output),
        "sandbox": _sandbox(prepared.policy),
    }
