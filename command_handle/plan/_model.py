"""The plan data model. Frozen dataclasses; ``to_json`` gives the inspectable form."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

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
    "Word",
    "iter_parts",
    "word_is_static",
    "word_text",
]

# The commands a plan runs in-process, with bash's semantics (the executor's
# builtins table holds exactly these); every other command is a program.
BUILTIN_NAMES = frozenset({"cd", "echo", "exit", "export", "false", "pwd", "true", ":"})


@dataclass(frozen=True)
class Lit:
    """Literal text. Unquoted text keeps its glob characters active, as in bash."""

    text: str
    quoted: bool = False

    def to_json(self) -> dict[str, object]:
        return {"text": self.text, "quoted": self.quoted}


@dataclass(frozen=True)
class Arg:
    """A tool argument (``UTCP_ARG_name_UTCP_END``): one value, never split or globbed."""

    name: str

    def to_json(self) -> dict[str, object]:
        return {"argument": self.name}


@dataclass(frozen=True)
class Var:
    """``$NAME``/``${NAME}`` from the step's variables; ``?`` is the last exit status.
    Unquoted, its value is split into fields and globbed, as in bash.

    ``op`` is a parameter operator, as bash applies it: ``:-``/``-`` (a default),
    ``:+``/``+`` (an alternative), ``:=``/``=`` (a default that is also
    assigned), ``:?``/``?`` (an error that ends the step), with ``word`` its
    operand; ``#`` is the value's length in characters.
    """

    name: str
    quoted: bool = False
    op: str | None = None
    word: tuple[Part, ...] = ()

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"variable": self.name, "quoted": self.quoted}
        if self.op is not None:
            out["operator"] = self.op
            out["word"] = _word_json(self.word)
        return out


@dataclass(frozen=True)
class Subst:
    """``$(...)`` or backticks: the body's standard output, trailing newlines removed."""

    body: Sequence
    quoted: bool = False

    def to_json(self) -> dict[str, object]:
        return {"substitute": self.body.to_json(), "quoted": self.quoted}


@dataclass(frozen=True)
class Tilde:
    """An unquoted ``~`` starting a word: the value of ``HOME``."""

    def to_json(self) -> dict[str, object]:
        return {"home": True}


Part: TypeAlias = Lit | Arg | Var | Subst | Tilde
Word: TypeAlias = tuple[Part, ...]


def iter_parts(word: Word) -> Iterator[Part]:
    """The word's parts, and the parts of its parameter operators' operands."""
    for part in word:
        yield part
        if isinstance(part, Var) and part.word:
            yield from iter_parts(part.word)


def word_is_static(word: Word) -> bool:
    """True when the word is literal text only (no expansion of any kind)."""
    return all(isinstance(part, Lit) for part in word)


def word_text(word: Word) -> str:
    """The literal text of a static word (quote removal done)."""
    return "".join(part.text for part in word if isinstance(part, Lit))


def _word_json(word: Word) -> list[dict[str, object]]:
    return [part.to_json() for part in word]


@dataclass(frozen=True)
class Assignment:
    """``NAME=value``; ``value`` is None for a bare ``export NAME``."""

    name: str
    value: Word | None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "value": None if self.value is None else _word_json(self.value)}


RedirectOp = Literal["<", ">", ">>", ">&", "<&", "&>", "&>>"]


@dataclass(frozen=True)
class Redirect:
    """``[fd]op target``. For ``>&``/``<&`` the target is a descriptor number (0-2)."""

    fd: int
    op: RedirectOp
    target: Word

    def to_json(self) -> dict[str, object]:
        return {"fd": self.fd, "op": self.op, "target": _word_json(self.target)}


@dataclass(frozen=True)
class Command:
    """A simple command, or ``export`` (``kind="export"``, its items in ``assignments``).

    ``assignments`` of a simple command are ``NAME=value`` prefixes: for the
    program's environment only, or shell variables when there are no words.
    ``offset`` is the character offset in the step's command, for messages.
    """

    words: tuple[Word, ...]
    assignments: tuple[Assignment, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    kind: Literal["simple", "export"] = "simple"
    offset: int = 0

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "offset": self.offset}
        out["words"] = [_word_json(word) for word in self.words]
        if self.assignments:
            out["assignments"] = [a.to_json() for a in self.assignments]
        if self.redirects:
            out["redirects"] = [r.to_json() for r in self.redirects]
        return out


@dataclass(frozen=True)
class Pipeline:
    """Commands joined by ``|``; ``stderr_piped[i]`` is True for ``|&`` after command i."""

    commands: tuple[Command, ...]
    negated: bool = False
    stderr_piped: tuple[bool, ...] = ()

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"commands": [c.to_json() for c in self.commands]}
        if self.negated:
            out["negated"] = True
        if any(self.stderr_piped):
            out["stderr_piped"] = list(self.stderr_piped)
        return out


@dataclass(frozen=True)
class Sequence:
    """Pipelines joined by ``;``, ``&&`` and ``||`` (``operators[i]`` joins i and i+1)."""

    pipelines: tuple[Pipeline, ...]
    operators: tuple[Literal[";", "&&", "||"], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "pipelines": [p.to_json() for p in self.pipelines],
            "operators": list(self.operators),
        }


@dataclass(frozen=True)
class Step:
    """One command of a UTCP template: its source, and whether it joins the final output."""

    index: int
    source: str
    append: bool
    body: Sequence
    working_dir: str | None = None  # a per-step directory: a cd before the step

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "index": self.index,
            "command": self.source,
            "append_to_final_output": self.append,
            "run": self.body.to_json(),
        }
        if self.working_dir is not None:
            out["working_dir"] = self.working_dir
        return out


@dataclass(frozen=True)
class PlanEnvironment:
    """How the child environment is built: host names passed through, then values
    set on top. Values may hold ``${NAME}`` references to the caller's variables."""

    inherit: tuple[str, ...] = ()
    set: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"inherit": list(self.inherit), "set": dict(self.set)}


@dataclass(frozen=True)
class Plan:
    """A translated template.

    ``mode="utcp"``: ``steps`` run in order in one shell state (directory,
    variables and exports persist), each step's stdout and stderr merged.
    ``mode="legacy"``: a UTCP 0.x provider; ``legacy_command`` runs with the
    arguments appended as ``--name value`` flags.
    """

    name: str
    steps: tuple[Step, ...] = ()
    environment: PlanEnvironment = field(default_factory=PlanEnvironment)
    working_dir: str | None = None
    arguments: tuple[str, ...] = ()
    mode: Literal["utcp", "legacy"] = "utcp"
    legacy_command: tuple[str, ...] = ()
    timeout: float | None = None  # seconds, the template's own; the policy caps it
    output_format: Literal["json", "text"] | None = None  # a 0.x provider's

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "mode": self.mode}
        out["working_dir"] = self.working_dir
        out["environment"] = self.environment.to_json()
        out["arguments"] = list(self.arguments)
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.mode == "legacy":
            out["command"] = list(self.legacy_command)
        else:
            out["steps"] = [step.to_json() for step in self.steps]
        return out
