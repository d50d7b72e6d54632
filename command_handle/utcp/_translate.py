"""Translate one bash command string into a plan :class:`~command_handle.plan.Sequence`.

tree-sitter-bash gives the structure: statements, lists, pipelines, command
substitutions, and every construct we refuse. Its word and redirect
boundaries are lossy in places (``a'b'$X`` splits in two, ``cmd >f arg``
folds ``arg`` into the redirect, ``a && b > f`` puts the redirect on the
whole list), so each simple command's text is re-read here by bash's word
rules: quoting, escapes, expansions, assignments and redirections.
Placeholders ``UTCP_ARG_name_UTCP_END`` become :class:`~command_handle.plan.Arg`
parts wherever they sit in literal text, so a tool argument is always one
value inside the word it is written in.
"""

from __future__ import annotations

import re
from typing import Literal

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from ..errors import TranslationError
from ..plan import (
    Arg,
    Assignment,
    Command,
    Lit,
    Part,
    Pipeline,
    Redirect,
    RedirectOp,
    Sequence,
    Subst,
    Tilde,
    Var,
    Word,
    word_is_static,
    word_text,
)

__all__ = ["PLACEHOLDER", "translate_command"]

_PARSER = Parser(Language(tree_sitter_bash.language()))

# utcp-cli 1.1.5's pattern, so the same text is a placeholder for both.
PLACEHOLDER = re.compile(r"UTCP_ARG_([a-zA-Z0-9_]+?)_UTCP_END")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_CMD_OUTPUT = re.compile(r"CMD_(\d+)_OUTPUT")
_BRACE_EXPANSION = re.compile(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")

# Node types refused wherever they appear, with the name the error gives them.
_REFUSED_NODES = {
    "subshell": "a subshell ( ... )",
    "compound_statement": "a command group { ... }",
    "if_statement": "an if statement",
    "while_statement": "a while loop",
    "for_statement": "a for loop",
    "c_style_for_statement": "a for loop",
    "case_statement": "a case statement",
    "function_definition": "a function definition",
    "heredoc_redirect": "a here-document",
    "herestring_redirect": "a here-string",
    "process_substitution": "process substitution",
    "arithmetic_expansion": "arithmetic expansion $(( ))",
    "compound_arithmetic": "arithmetic (( ))",
    "test_command": "a [[ ]] test",
    "unset_command": "unset",
    "ansi_c_string": "ANSI-C quoting $'...'",
    "translated_string": 'locale quoting $"..."',
    "brace_expression": "brace expansion",
}

# Builtins bash would run in-process that we do not: path lookup would run
# something else, or nothing, so the template is refused instead.
_REFUSED_BUILTINS = frozenset(
    (
        *("eval", "source", ".", "exec", "return", "set", "unset", "alias"),
        *("unalias", "read", "trap", "shift", "local", "declare", "typeset", "readonly"),
        *("let", "wait", "jobs", "fg", "bg", "disown", "suspend", "builtin", "command"),
        *("enable", "hash", "type", "ulimit", "umask", "shopt", "history", "fc"),
        *("getopts", "caller", "coproc", "mapfile", "readarray", "bind", "complete"),
        *("compgen", "compopt", "dirs", "pushd", "popd", "logout", "times", "break"),
        "continue",
    )
)

_STATEMENT_LEAVES = frozenset(
    {"command", "declaration_command", "variable_assignment", "variable_assignments"}
)
_METACHARACTERS = frozenset("|&;()<>")
_BLANKS = frozenset(" \t")


def translate_command(source: str, step: int) -> Sequence:
    """Translate the command text of step ``step``; raise :class:`TranslationError`."""
    return _Translator(source, step).translate()


class _Translator:
    def __init__(self, source: str, step: int) -> None:
        self.source = source
        self.step = step
        data = source.encode("utf-8", "surrogatepass")
        self.char_at = _byte_to_char(source, len(data))
        self.tree = _PARSER.parse(data)
        self.substitutions: dict[int, Node] = {}
        self.expansions: dict[int, Node] = {}

    # -- errors and positions ------------------------------------------------

    def error(self, message: str, offset: int, construct: str) -> TranslationError:
        return TranslationError(
            message, step=self.step, source=self.source, offset=offset, construct=construct
        )

    def start(self, node: Node) -> int:
        offset = self.char_at[node.start_byte]
        # tree-sitter sometimes starts a token at the blank before it.
        while offset < len(self.source) and self.source[offset] in _BLANKS:
            offset += 1
        return offset

    def end(self, node: Node) -> int:
        return self.char_at[node.end_byte]

    # -- structure -----------------------------------------------------------

    def translate(self) -> Sequence:
        root = self.tree.root_node
        self._scan(root)
        sequence = self.sequence(root.children, self.start(root))
        if not sequence.pipelines:
            raise self.error("the command is empty", 0, "empty command")
        return sequence

    def _scan(self, node: Node) -> None:
        """Refuse syntax errors and unsupported constructs; index command substitutions."""
        if node.is_missing:
            raise self.error(f"syntax error: missing {node.type!r}", self.start(node), "syntax")
        if node.type == "ERROR":
            raise self.error("syntax error", self.start(node), "syntax")
        construct = _REFUSED_NODES.get(node.type)
        if node.type == "test_command" and not self.is_double_bracket(node):
            construct = None  # [ ... ] runs the program named [, as bash's builtin does
        if construct is not None:
            raise self.error(f"{construct} is not supported", self.start(node), construct)
        if node.type == "command_substitution":
            self.substitutions[self.start(node)] = node
        if node.type == "expansion":
            self.expansions[self.char_at[node.start_byte]] = node
        for child in node.children:
            self._scan(child)

    def is_double_bracket(self, node: Node) -> bool:
        """tree-sitter-bash gives ``[ ]`` and ``[[ ]]`` one node type; the text tells."""
        return self.source.startswith("[[", self.start(node))

    def sequence(self, nodes: list[Node], offset: int) -> Sequence:
        pipelines: list[Pipeline] = []
        operators: list[Literal[";", "&&", "||"]] = []
        for node in nodes:
            if node.type in ("comment", ";", "\n", "$(", ")", "`"):
                continue
            if node.type in ("&", "&&", "||", "|") and not node.is_named:
                if node.type == "&":
                    raise self.error(
                        "running a command in the background (&) is not supported",
                        self.start(node),
                        "background job",
                    )
                continue
            if pipelines:
                operators.append(";")
            self.statement(node, pipelines, operators)
        if len(operators) != max(len(pipelines) - 1, 0):  # pragma: no cover - grammar guard
            raise self.error("could not read the command list", offset, "syntax")
        return Sequence(tuple(pipelines), tuple(operators))

    def statement(
        self,
        node: Node,
        pipelines: list[Pipeline],
        operators: list[Literal[";", "&&", "||"]],
    ) -> None:
        kind = node.type
        if kind == "list":
            # left op right, left-nested: flatten in order.
            left, op, right = node.children[0], node.children[1], node.children[2]
            self.statement(left, pipelines, operators)
            operator: Literal["&&", "||"] = "&&" if op.type == "&&" else "||"
            if op.type not in ("&&", "||"):
                raise self.error(
                    f"the operator {op.type!r} is not supported", self.start(op), "operator"
                )
            operators.append(operator)
            self.statement(right, pipelines, operators)
            return
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None and body.type in ("list", "pipeline"):
                # bash gives the redirections to the last command, not the whole list.
                self.statement(body, pipelines, operators)
                redirects = tuple(
                    redirect
                    for index, child in enumerate(node.children)
                    if node.field_name_for_child(index) == "redirect"
                    for redirect in self.leaf(
                        self.start(child), self.end(child), "redirects"
                    ).redirects
                )
                last = pipelines[-1]
                command = last.commands[-1]
                commands = (*last.commands[:-1], _with_redirects(command, redirects))
                pipelines[-1] = Pipeline(commands, last.negated, last.stderr_piped)
                return
        pipelines.append(self.pipeline(node))

    def pipeline(self, node: Node) -> Pipeline:
        if node.type != "pipeline":
            if node.type == "negated_command":
                inner = node.children[-1]
                inner_pipeline = self.pipeline(inner)
                return Pipeline(inner_pipeline.commands, True, inner_pipeline.stderr_piped)
            return Pipeline((self.command(node),))
        commands: list[Command] = []
        piped: list[bool] = []
        negated = False
        for child in node.children:
            if child.type in ("|", "|&"):
                piped.append(child.type == "|&")
                continue
            if child.type == "negated_command":
                if commands:
                    raise self.error("'!' inside a pipeline", self.start(child), "negation")
                negated = True  # bash negates the whole pipeline
                child = child.children[-1]
            commands.append(self.command(child))
        return Pipeline(tuple(commands), negated, tuple(piped))

    def command(self, node: Node) -> Command:
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is None or body.type in _STATEMENT_LEAVES or body.type == "test_command":
                return self.leaf(self.start(node), self.end(node), "command")
            raise self.error(
                f"redirecting {body.type.replace('_', ' ')} is not supported",
                self.start(node),
                body.type,
            )
        if node.type == "declaration_command":
            keyword = node.children[0].type
            if keyword != "export":
                raise self.error(f"{keyword} is not supported", self.start(node), keyword)
            return self.leaf(self.start(node), self.end(node), "export")
        if node.type in _STATEMENT_LEAVES or node.type == "test_command":
            return self.leaf(self.start(node), self.end(node), "command")
        raise self.error(
            f"{node.type.replace('_', ' ')} is not supported", self.start(node), node.type
        )

    # -- simple commands, read by bash's rules ---------------------------------

    def leaf(
        self, start: int, end: int, kind: Literal["command", "export", "redirects"]
    ) -> Command:
        source = self.source
        words: list[Word] = []
        assignments: list[Assignment] = []
        redirects: list[Redirect] = []
        i = start
        while i < end:
            char = source[i]
            if char in _BLANKS:
                i += 1
                continue
            if source.startswith("\\\n", i):
                i += 2
                continue
            if char == "\n":
                raise self.error("unexpected line break", i, "syntax")
            if char == "#" and (i == start or source[i - 1] in _BLANKS):
                break  # a comment runs to the end of the line
            redirect = self.redirect_at(i, end)
            if redirect is not None:
                redirects.append(redirect[0])
                i = redirect[1]
                continue
            if char in _METACHARACTERS:
                raise self.error(f"unexpected {char!r}", i, "syntax")
            if kind == "redirects":
                raise self.error("unexpected word after a redirection", i, "syntax")
            assignment = _ASSIGNMENT.match(source, i)
            in_position = (kind == "export" and words) or (kind == "command" and not words)
            if assignment and in_position:
                name = assignment.group(1)
                self.check_name(name, i)
                value, i = self.word(assignment.end(), end, assignment_value=True)
                assignments.append(Assignment(name, value))
                continue
            word_start = i
            word, i = self.word(i, end)
            if kind == "export" and words:
                if not (word_is_static(word) and _NAME.fullmatch(word_text(word))):
                    raise self.error(
                        "export takes NAME or NAME=value", word_start, "export argument"
                    )
                self.check_name(word_text(word), word_start)
                assignments.append(Assignment(word_text(word), None))
                continue
            if not words and kind == "command":
                self.check_program(word, word_start)
            words.append(word)
        if kind == "export":
            return Command((), tuple(assignments), tuple(redirects), "export", start)
        if (
            len(words) > 1
            and word_is_static(words[0])
            and word_text(words[0]) == "printf"
            and word_is_static(words[1])
            and word_text(words[1]).startswith("-v")
        ):
            raise self.error(
                "printf -v (assigning a variable) is not supported; use X=$(printf ...)",
                start,
                "printf -v",
            )
        return Command(tuple(words), tuple(assignments), tuple(redirects), "simple", start)

    def check_name(self, name: str, offset: int) -> None:
        if name == "IFS":
            raise self.error(
                "assigning IFS is not supported: word splitting here always uses space, tab "
                "and newline",
                offset,
                "IFS",
            )
        if PLACEHOLDER.search(name):
            raise self.error(
                "a tool argument cannot name a variable", offset, "placeholder in a name"
            )

    def check_program(self, word: Word, offset: int) -> None:
        for part in word:
            if isinstance(part, Arg) or (
                isinstance(part, Var) and _CMD_OUTPUT.fullmatch(part.name)
            ):
                raise self.error(
                    "the program to run cannot come from a tool argument or a step's output",
                    offset,
                    "computed program",
                )
        if word_is_static(word):
            name = word_text(word)
            if name in _REFUSED_BUILTINS:
                raise self.error(f"the builtin {name!r} is not supported", offset, name)
            if name == "time":
                raise self.error(
                    "time (bash's keyword that times a pipeline) is not supported", offset, "time"
                )
            if name == "export":  # quoted or escaped: bash still runs the builtin
                raise self.error("write export unquoted", offset, "export")

    def redirect_at(self, i: int, end: int) -> tuple[Redirect, int] | None:
        source = self.source
        match = re.compile(r"(\d*)(&>>|&>|>>|>&|<&|>\||<<<|<<|<>|>|<)").match(source, i, end)
        if match is None:
            return None
        digits, op = match.group(1), match.group(2)
        if op in ("<<", "<<<"):
            name = "a here-document" if op == "<<" else "a here-string"
            raise self.error(f"{name} is not supported", i, name)
        if op in (">|", "<>"):
            raise self.error(f"the redirection {op!r} is not supported", i, "redirection")
        if digits and op.startswith("&"):
            return None  # '2&>' is the word '2' then '&>'
        fd = int(digits) if digits else (0 if op[0] == "<" else 1)
        if fd > 2:
            raise self.error("only descriptors 0, 1 and 2 can be redirected", i, "redirection")
        j = match.end()
        while j < end and source[j] in _BLANKS:
            j += 1
        if j >= end or source[j] in _METACHARACTERS or source[j] == "\n":
            raise self.error(f"the redirection {op!r} has no target", i, "redirection")
        target_start = j
        target, j = self.word(j, end)
        redirect_op: RedirectOp = op  # type: ignore[assignment]  # one of the matched operators
        if op in (">&", "<&"):
            text = word_text(target) if word_is_static(target) else ""
            if text in ("0", "1", "2"):
                return Redirect(fd, redirect_op, target), j
            if op == ">&" and not digits and not text.isdigit() and text != "-":
                return Redirect(1, "&>", target), j  # bash: '>&file' is '&>file'
            raise self.error(
                "a descriptor redirection must name descriptor 0, 1 or 2",
                target_start,
                "redirection",
            )
        return Redirect(fd, redirect_op, target), j

    # -- words -----------------------------------------------------------------

    def word(self, i: int, end: int, *, assignment_value: bool = False) -> tuple[Word, int]:
        """Read one word from ``i``: its parts, and where it stopped."""
        source = self.source
        parts = _Parts()
        start = i
        unquoted_text: list[str] = []
        while i < end:
            char = source[i]
            if char in _BLANKS or char == "\n" or char in _METACHARACTERS:
                break
            if char == "~" and i == start:
                j = i + 1
                if j >= end or source[j] in "/: \t\n" or source[j] in _METACHARACTERS:
                    parts.add(Tilde())
                    i = j
                    continue
                if not assignment_value:
                    raise self.error("~user expansion is not supported", i, "tilde expansion")
            if char == "'":
                close = source.find("'", i + 1, end)
                if close < 0:
                    raise self.error("unterminated single quote", i, "syntax")
                self.literal(parts, i + 1, close, quoted=True)
                parts.mark_quoted()
                i = close + 1
                continue
            if char == '"':
                i = self.double_quoted(parts, i, end)
                continue
            if char == "\\":
                if i + 1 >= end:
                    parts.lit("\\", quoted=False)
                    unquoted_text.append("\\")
                    i += 1
                    continue
                if source[i + 1] != "\n":
                    parts.lit(source[i + 1], quoted=True)
                i += 2
                continue
            if char == "$" or char == "`":
                part, i = self.expansion(i, end, quoted=False)
                if part is None:
                    parts.lit("$", quoted=False)
                    unquoted_text.append("$")
                else:
                    parts.add(part)
                continue
            placeholder = PLACEHOLDER.match(source, i, end)
            if placeholder:
                parts.add(Arg(placeholder.group(1)))
                i = placeholder.end()
                continue
            parts.lit(char, quoted=False)
            unquoted_text.append(char)
            i += 1
        if not assignment_value and _BRACE_EXPANSION.search("".join(unquoted_text)):
            raise self.error("brace expansion is not supported", start, "brace expansion")
        return parts.word(), i

    def literal(self, parts: _Parts, i: int, end: int, *, quoted: bool) -> None:
        """Literal text from ``i`` to ``end``, with placeholders picked out."""
        for match in PLACEHOLDER.finditer(self.source, i, end):
            if match.start() > i:
                parts.lit(self.source[i : match.start()], quoted=quoted)
            parts.add(Arg(match.group(1)))
            i = match.end()
        if end > i:
            parts.lit(self.source[i:end], quoted=quoted)

    def double_quoted(self, parts: _Parts, i: int, end: int) -> int:
        source = self.source
        parts.mark_quoted()
        i += 1
        text_start = i
        while i < end:
            char = source[i]
            if char == '"':
                self.literal(parts, text_start, i, quoted=True)
                return i + 1
            if char == "\\" and i + 1 < end and source[i + 1] in '$`"\\\n':
                self.literal(parts, text_start, i, quoted=True)
                if source[i + 1] != "\n":
                    parts.lit(source[i + 1], quoted=True)
                i += 2
                text_start = i
                continue
            if char == "$" or char == "`":
                part, after = self.expansion(i, end, quoted=True)
                if part is not None:
                    self.literal(parts, text_start, i, quoted=True)
                    parts.add(part)
                    i = text_start = after
                    continue
                i = after
                continue
            i += 1
        raise self.error("unterminated double quote", text_start - 1, "syntax")

    def braced(self, i: int, end: int, quoted: bool) -> tuple[Part, int]:
        """``${NAME}``, ``${#NAME}``, or ``${NAME<op>word}`` with ``op`` one of
        ``:-``, ``-``, ``:+``, ``+``, ``:=``, ``=``, ``:?``, ``?``."""
        source = self.source
        node = self.expansions.get(i)
        close = self.end(node) - 1 if node is not None else source.find("}", i + 2, end)
        inner = source[i + 2 : close] if close > i else ""

        def refuse() -> TranslationError:
            return self.error(
                f"the parameter expansion ${{{inner}}} is not supported; ${{NAME}}, "
                "${#NAME} and the operators :- - :+ + := = :? ? are",
                i,
                "parameter expansion",
            )

        if close < 0 or source[close] != "}":
            raise refuse()
        if inner.startswith("#") and _NAME.fullmatch(inner[1:]):
            self.check_name(inner[1:], i)
            return Var(inner[1:], quoted, "#"), close + 1
        match = _OPERATOR.match(inner)
        if match is None or (match.group(2) is None and match.end() != len(inner)):
            raise refuse()
        name, op = match.group(1), match.group(2)
        self.check_name(name, i)
        if op is None:
            return Var(name, quoted), close + 1
        if name == "?":
            raise refuse()
        operand = self.operand(i + 2 + match.end(), close, quoted)
        return Var(name, quoted, op, operand), close + 1

    def operand(self, i: int, end: int, quoted: bool) -> Word:
        """An operator's word, read as bash reads it: quotes are removed; inside
        double quotes single quotes are plain text; expansions and placeholders
        are expanded; unquoted text may split into fields."""
        source = self.source
        parts = _Parts()
        while i < end:
            char = source[i]
            if char == "'" and not quoted:
                close = source.find("'", i + 1, end)
                if close < 0:
                    raise self.error("unterminated single quote", i, "syntax")
                self.literal(parts, i + 1, close, quoted=True)
                parts.mark_quoted()
                i = close + 1
            elif char == '"':
                i = self.double_quoted(parts, i, end)
            elif char == "\\" and i + 1 < end:
                if not quoted or source[i + 1] in '$`"\\}':
                    parts.lit(source[i + 1], quoted=True)
                else:
                    parts.lit(source[i : i + 2], quoted=True)
                i += 2
            elif char in "$`":
                part, after = self.expansion(i, end, quoted=quoted)
                if part is None:
                    parts.lit("$", quoted=quoted)
                else:
                    parts.add(part)
                i = after
            else:
                placeholder = PLACEHOLDER.match(source, i, end)
                if placeholder:
                    parts.add(Arg(placeholder.group(1)))
                    i = placeholder.end()
                    continue
                parts.lit(char, quoted=quoted)
                i += 1
        return parts.word()

    def expansion(self, i: int, end: int, *, quoted: bool) -> tuple[Part | None, int]:
        """``$...`` or a backtick at ``i``. None means a literal ``$``."""
        source = self.source
        if source[i] == "`" or source.startswith("$(", i):
            node = self.substitutions.get(i)
            if node is None:
                raise self.error("could not read this command substitution", i, "syntax")
            stop = self.end(node)
            if source[i] == "`" and "\\" in source[i:stop]:
                raise self.error(
                    "backslashes inside backticks are not supported; use $( ... )",
                    i,
                    "backtick escapes",
                )
            body = self.sequence(node.children, i)
            if not body.pipelines:
                raise self.error("the command substitution is empty", i, "empty substitution")
            return Subst(body, quoted), stop
        nxt = source[i + 1] if i + 1 < end else ""
        if nxt == "{":
            return self.braced(i, end, quoted)
        name = _NAME.match(source, i + 1, end)
        if name:
            self.check_name(name.group(0), i)
            return Var(name.group(0), quoted), name.end()
        if nxt == "?":
            return Var("?", quoted), i + 2
        if nxt and (nxt.isdigit() or nxt in "@*#$!-"):
            raise self.error(
                f"the special parameter ${nxt} is not supported", i, "special parameter"
            )
        if nxt == "'" and not quoted:
            raise self.error("ANSI-C quoting $'...' is not supported", i, "ANSI-C quoting")
        if nxt == '"' and not quoted:
            raise self.error('locale quoting $"..." is not supported', i, "locale quoting")
        return None, i + 1


_OPERATOR = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|\?)(:-|:\+|:=|:\?|-|\+|=|\?)?")


class _Parts:
    """Accumulates word parts, merging adjacent literals of the same kind."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[Part] = []

    def lit(self, text: str, *, quoted: bool) -> None:
        last = self.parts[-1] if self.parts else None
        if isinstance(last, Lit) and last.quoted == quoted:
            self.parts[-1] = Lit(last.text + text, quoted)
        else:
            self.parts.append(Lit(text, quoted))

    def add(self, part: Part) -> None:
        self.parts.append(part)

    def mark_quoted(self) -> None:
        # "" and '' make a field even when empty: an empty quoted literal says so.
        self.lit("", quoted=True)

    def word(self) -> Word:
        parts = self.parts
        if len(parts) > 1 and any(_is_quoted(part) and part != _EMPTY for part in parts):
            # another quoted part already makes the field: drop the markers.
            parts = [part for part in parts if part != _EMPTY]
        return tuple(parts)


_EMPTY = Lit("", True)


def _is_quoted(part: Part) -> bool:
    return isinstance(part, Arg) or (isinstance(part, (Lit, Var, Subst)) and part.quoted)


def _with_redirects(command: Command, redirects: tuple[Redirect, ...]) -> Command:
    return Command(
        command.words,
        command.assignments,
        command.redirects + redirects,
        command.kind,
        command.offset,
    )


def _byte_to_char(source: str, size: int) -> list[int]:
    """Map each UTF-8 byte offset (tree-sitter's unit) to a character offset."""
    table = [0] * (size + 1)
    byte = 0
    for index, char in enumerate(source):
        width = len(char.encode("utf-8", "surrogatepass"))
        for k in range(width):
            table[byte + k] = index
        byte += width
    table[size] = len(source)
    return table
