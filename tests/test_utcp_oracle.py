"""The oracle: each supported construct runs under ``/bin/bash -c`` and as a
translated plan, and the outputs (stdout and stderr merged) must be equal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from command_handle import Policy, utcp

BASH = "/bin/bash"

# Each entry is a command bash and the plan both run. Programs other than the
# builtins are found by path (/usr/bin, /bin).
CONSTRUCTS: dict[str, str] = {
    "quoting": 'echo a"b"c\'d\' e\\ f "g\\"h" \'i\\j\' "$HOME"\'$HOME\'',
    "variables": 'echo $HOME ${HOME}x "${HOME}"',
    "splitting": "X='a  b   c'; echo $X \"$X\"; printf '[%s]' $X; echo",
    "empty fields": "printf '[%s]' a $NOPE b \"\" \"$NOPE\" c''; echo",
    "ifs edges": "X='  lead trail  '; printf '[%s]' x$X\"y\"; echo",
    "command substitution": 'echo "$(echo hi; echo there)" $(echo a   b) `echo tick`',
    "nested substitution": 'echo $(echo $(echo deep) "$(echo er)")',
    "trailing newlines": "x=$(printf 'a\\n\\n\\n'); echo \"[$x]\"",
    "substitution status": "x=$(false); echo $?; x=$(true); echo $?",
    "pipeline": "printf 'b\\na\\nc\\n' | sort | head -2",
    "pipeline status": "false | true; echo $?; true | false; echo $?",
    "builtin in pipeline": "echo hi there | tr a-z A-Z",
    "and or": "true && echo yes || echo no; false && echo yes || echo no",
    "negation": "! false && echo negated; ! true || echo not",
    "status": "false; echo $?; true; echo $?; :; echo $?",
    "redirect out": "echo data > out.txt; echo more >> out.txt; cat out.txt",
    "redirect in": "wc -l < a.txt",
    "redirect stderr": "ls nope 2>&1 | wc -l; ls nope 2>/dev/null; echo $?",
    "redirect order": "ls nope a.txt > both.txt 2>&1; sort both.txt",
    "redirect to stderr": "echo to-stderr 1>&2",
    "redirect both": "ls nope &> all.txt; wc -l < all.txt",
    "stderr pipe": "ls nope |& wc -l",
    "prefix assignment": "FOO=bar env | grep '^FOO='; echo \"[$FOO]\"",
    "shell assignment": 'A=1 B="two words"; echo $A "$B"',
    "export": "export FOO=bar BAZ; env | grep -c '^FOO=bar$'",
    "cd and pwd": "cd sub && pwd && cd .. && pwd; cd sub; echo $PWD",
    "cd failure": "cd nope 2>/dev/null || echo failed",
    "cd home": "cd; pwd; cd -",
    "echo options": "echo -n x; echo -e 'a\\tb\\x41\\0101'; echo -E 'a\\tb'; echo -x -n; "
    "echo -ne 'a\\cb' c",
    "globs": 'echo *.txt; echo s*/*.txt; echo *.nomatch; echo "*.txt"; echo [ab].txt ?.py',
    "hidden files": "echo * .h*",
    "glob from variable": "P='*.py'; echo $P \"$P\"",
    "tilde": 'echo ~ ~/x "~" a~',
    "comment": "echo a # a comment",
    "line continuation": "echo a \\\n b",
    "newline separated": "echo one\necho two",
    "empty quoted words": "printf '[%s]' '' \"\"; echo",
    "dollar alone": "echo $ a$ \"$\" '$'",
    "pwd physical": "cd link && pwd && pwd -P | sed 's|.*/||'",
    "default operators": "X=; Y=v; printf '[%s]' ${X:-d1} ${X-d2} \"${U:-d 3}\" ${Y:-no} "
    "${U-u}; echo",
    "alternative operators": "X=; Y=v; printf '[%s]' ${X:+a1} ${X+a2} \"${U:+a3}\" ${Y:+a 4}; echo",
    "assigning operators": 'printf \'[%s]\' ${A:=one} "${B=two words}"; echo "$A|$B"',
    "length operator": "X=hello; Y=; echo ${#X} ${#Y} ${#U}",
    "nested operators": 'echo ${U:-${V:-deep}} "${U:-\'q\'}" ${U:-\'a  b\'} "${U:-"x  y"}"',
    "operator globs": "printf '[%s]' ${U:-*.txt} \"${U:-*.txt}\"; echo",
    "test brackets": "[ -f a.txt ] && echo file; [ 1 -gt 2 ] || echo smaller; "
    '[ "$HOME" = "" ] || echo set',
    "exit": "echo before; exit 3; echo after",
    "exit in a substitution": 'x=$(echo in; exit 5); echo "$x" $?',
    "exit in a pipeline": "exit 2 | cat; echo after $?",
    "write errors": "echo x 2>/dev/null >/dev/full; echo $?; pwd 2>/dev/null >/dev/full; echo $?; "
    "printf x 2>/dev/null >/dev/full; echo $?; echo -n '' >/dev/full; echo $?; "
    "cd sub; cd - 2>/dev/null >/dev/full; echo $? $PWD",
    "stream names": "echo a > /dev/stderr; echo b > /dev/stdout; echo c > /dev/fd/2; "
    "echo d 2>&1 > /dev/fd/1; cat < /dev/stdin; echo e 2>/dev/null > /dev/fd/7; echo $?",
}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "b.txt").write_text("b\n")
    (tmp_path / "c.py").write_text("print(1)\n")
    (tmp_path / ".hidden").write_text("")
    (tmp_path / "with space.txt").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.txt").write_text("d\n")
    (tmp_path / "link").symlink_to(tmp_path / "sub")
    return tmp_path


def _env(home: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C"}


def run_bash(command: str, cwd: Path, extra: dict[str, str] | None = None) -> bytes:
    completed = subprocess.run(
        [BASH, "-c", command],
        cwd=cwd,
        env={**_env(cwd), **(extra or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
    )
    return completed.stdout.rstrip(b"\n")


def run_plan(command: str, cwd: Path, args: dict[str, Any] | None = None) -> bytes:
    template = {
        "name": "oracle",
        "call_template_type": "cli",
        "commands": [{"command": command}],
        "inherit_env_vars": [],
        "env_vars": _env(cwd),
        "working_dir": str(cwd),
    }
    # utcp-cli lets an argument begin a word with '-': the oracle compares its
    # behaviour, so the policy opts out of the flag guard here.
    policy = Policy(allow_utcp_options=True)
    result = trio.run(lambda: utcp.run(template, args or {}, policy=policy))
    return result.steps[0].output.rstrip(b"\n")


@pytest.mark.parametrize("command", CONSTRUCTS.values(), ids=CONSTRUCTS.keys())
def test_plan_matches_bash(command: str, workdir: Path) -> None:
    expected = run_bash(command, workdir)
    assert run_plan(command, workdir) == expected
    for name in ("out.txt", "both.txt", "all.txt"):  # the next run starts clean
        (workdir / name).unlink(missing_ok=True)


# Placeholders, with the bash text utcp-cli 1.1.5 emits for them: "$V" bare,
# ${V} inside double quotes, '"$V"' inside single quotes.
PLACEHOLDERS = [
    ("echo UTCP_ARG_v_UTCP_END", 'echo "$V"'),
    ('echo "at UTCP_ARG_v_UTCP_END end"', 'echo "at ${V} end"'),
    ("echo 'at UTCP_ARG_v_UTCP_END end'", "echo 'at '\"$V\"' end'"),
    ("printf '[%s]' pre-UTCP_ARG_v_UTCP_END-post", "printf '[%s]' pre-\"$V\"-post"),
    ("cd UTCP_ARG_v_UTCP_END 2>/dev/null; pwd", 'cd "$V" 2>/dev/null; pwd'),
]
VALUES = ["plain", "two  spaces", "*.txt", "$(echo no)", "a\nb", "'\"\\", "-n", ""]


@pytest.mark.parametrize(("template", "bash"), PLACEHOLDERS)
@pytest.mark.parametrize("value", VALUES)
def test_placeholders_match_utcp_cli_quoting(
    template: str, bash: str, value: str, workdir: Path
) -> None:
    expected = run_bash(bash, workdir, {"V": value})
    assert run_plan(template, workdir, {"v": value}) == expected


def test_the_oracle_sees_a_real_bash() -> None:
    assert os.access(BASH, os.X_OK)
    assert run_bash("echo $((1+1))", Path("/")) == b"2"
