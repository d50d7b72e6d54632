"""The Command Handle model (draft-csachs-command-handle-00 section 2, Tool Handle 2.1)."""

from __future__ import annotations

import codecs
import itertools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import _json, _jsonschema
from .._documents import read_document
from .._secrets import MIN_REDACTED, secret_values
from ..args import OptionLikeError
from ..call import (
    CommandResult,
    Invocation,
    MaskedView,
    PreparedCall,
    Session,
    ShownFields,
    StreamMode,
)
from ..errors import (
    ArgumentsError,
    ArgvTextError,
    CommandError,
    CommandHandleError,
    HandleLoadError,
    TemplateEvaluationError,
    Violation,
)
from ..form import UNDEFINED, FormError, Template
from ..form.extend import json_pointer
from ..policy import (
    Policy,
    argv_problem,
    check_directory_within,
    check_paths,
    resolve_command,
    resolve_directory,
    resolve_environment,
)
from ._names import unprovided_names
from ._options import allowed_values, check_option_like, refusal_from_encoding
from ._shown import shown_fields
from ._templates import compile_shared
from .directives._registry import registry_for

__all__ = ["CommandHandle", "IoSpec", "check_arguments"]

_TEMPLATE_FIELDS = ("command", "arguments", "directory", "environment", "result")


class IoSpec(BaseModel):
    """Section 3.3: how the standard streams are handled."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stdin: Any = Field(default=None, description="Tool Form yielding a string or binary value")
    stdout: StreamMode = "pipe"
    stderr: StreamMode = "pipe"
    encoding: str = Field(
        default="utf8", description="a Python codec name for the captured output, or 'binary'"
    )

    @field_validator("encoding")
    @classmethod
    def _known_codec(cls, value: str) -> str:
        if value == "binary":
            return value
        try:
            codecs.lookup(value)
        except LookupError:
            raise ValueError(
                f"unknown encoding {value!r}; use a Python codec name or 'binary'"
            ) from None
        return value


class SessionSpec(BaseModel):
    """An extension: the program may outlive its call (docs/processes.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    yield_after: float = Field(
        default=10.0, gt=0, le=600, description="seconds the call waits before returning"
    )
    ready: str | None = Field(
        default=None, description="a regular expression: the call returns once the output matches"
    )
    max_lifetime: float | None = Field(
        default=None, gt=0, description="seconds; the policy's session_lifetime caps it"
    )
    terminal: bool = Field(default=False, description="run the program on a pseudo-terminal")
    secret_input: bool = Field(
        default=False, description="what the model writes to it is left out of events"
    )

    @field_validator("ready")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"ready is not a valid regular expression: {exc}") from None
        return value

    def settings(self) -> Session:
        return Session(
            yield_after=self.yield_after,
            ready=self.ready,
            max_lifetime=self.max_lifetime,
            terminal=self.terminal,
            secret_input=self.secret_input,
        )


class CommandHandle(BaseModel):
    """A Command Handle: a Tool Description plus how to run the command.

    Every template field is compiled when the handle is created, so a malformed
    template is a load error, not a surprise at call time. Extensions of this
    project: ``timeout`` (seconds), ``max_output`` (bytes kept per stream) and
    ``result`` (a Tool Form over the execution result that shapes what the
    model sees). Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    handle: Literal["command"] | None = None
    handler: Literal["command"] | None = None
    command: Any = Field(
        description="Tool Form yielding the program: absolute path, relative path or name"
    )
    arguments: Any = Field(
        default=None, description="Tool Form yielding a string or an array of strings"
    )
    directory: Any = Field(default=None, description="Tool Form yielding the working directory")
    environment: Any = Field(default=None, description="Tool Form yielding an object of variables")
    io: IoSpec | None = None
    timeout: float | None = Field(default=None, gt=0, description="seconds; the policy caps it")
    max_output: int | None = Field(default=None, gt=0, description="bytes kept per stream")
    result: Any = Field(default=None, description="Tool Form over the execution result")
    success_exit_codes: list[int] = Field(
        default_factory=lambda: [0],
        min_length=1,
        description="the exit codes that mean the program succeeded (grep: [0, 1]); any "
        "other exit, a signal or a timeout is a failure",
    )
    paths: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='parameters that are paths kept inside a root: {"file": {"within": '
        '"workspace", "exists": true}} (within: "workspace" or an absolute directory)',
    )
    directory_within: str | None = Field(
        default=None,
        description='keep a directory computed from the arguments inside "workspace" or '
        "an absolute directory",
    )
    options_allowed: list[str] = Field(
        default_factory=list,
        description="parameters whose values may begin with '-', '+' or '@' (the program "
        "takes them as options on purpose, as grep -e takes a pattern)",
    )
    security: dict[str, Any] | list[dict[str, Any]] | None = Field(
        default=None,
        description="Tool Handle 2.4: a Security Object (or an array of them) naming how to "
        "obtain the credential; never the credential itself",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="a JSON Schema (type object) of the structured result: the value of the "
        "result template (MCP outputSchema)",
    )
    annotations: dict[str, Any] | None = Field(
        default=None,
        description="hints for clients, with MCP's names: title, readOnlyHint, "
        "destructiveHint, idempotentHint, openWorldHint",
    )
    session: SessionSpec | None = Field(
        default=None,
        description="the program may outlive the call: it returns while the program "
        "runs, which the model then reads, writes and stops (docs/processes.md)",
    )

    # Everything compiled from the fields, in one private attribute: pydantic's
    # private attributes are slow to read, so calls read it with _compiled_of.
    _compiled: _Compiled = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        # The constructor refuses a bad handle the way load() does.
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _load_error(exc) from None
        except FormError as exc:
            raise HandleLoadError(f"invalid template: {exc.message}", exc.pointer) from None

    # Pydantic's mark of its own __init__: without it, model_validate (load)
    # calls this __init__, which validates and compiles the handle a second time.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """A new handle with ``update`` applied, validated and compiled afresh.

        Pydantic's copy would keep the compiled templates of the old values.
        """
        data = self.model_dump(exclude_unset=True)
        data.update(update or {})
        return type(self).from_dict(data)

    @model_validator(mode="after")
    def _check_and_compile(self) -> CommandHandle:
        """Check the whole handle, in the order its refusals are reported, and
        compile its templates."""
        self._check_handler()
        validator = self._parameters_validator()
        if self.command is None:
            raise _FieldError("a Command Handle needs a command", "/command")
        self._check_path_rules()
        self._check_options_allowed()
        for index, code in enumerate(self.success_exit_codes):
            if not 0 <= code <= 255:
                raise _FieldError(
                    "an exit code is between 0 and 255", f"/success_exit_codes/{index}"
                )
        _check_security(self.security)
        if self.output_schema is not None:
            _check_output_schema(self.output_schema)
        _check_annotations(self.annotations)
        templates = self._compile_templates()
        self._check_names()
        self._compiled = _Compiled(
            templates=templates,
            validator=validator,
            credential_fields=frozenset(
                name
                for name in ("environment", "io/stdin")
                if _reads_credential(self._source(name))
            ),
            written_command=self._written_command(),
            written_directory=self._written_directory(),
            written_environment=self._written_environment(),
            command=_constant_string(templates["command"]),
        )
        return self

    def _check_handler(self) -> None:
        if (self.handle is None) == (self.handler is None):
            raise _FieldError(
                "give exactly one of 'handle' (Command Handle examples) or 'handler' "
                "(Tool Handle), with the value 'command'",
                "/handler" if self.handler is not None else "/handle",
            )

    def _parameters_validator(self) -> Any:
        """The validator of ``parameters``, which must be an object's JSON Schema."""
        if self.parameters.get("type") != "object":
            raise _FieldError('parameters must be a JSON Schema with type: "object"', "/parameters")
        try:
            _jsonschema.check_schema(self.parameters)
        except _jsonschema.load().SchemaError as exc:  # evaluated only on a refusal
            raise _FieldError(
                f"parameters is not a valid JSON Schema: {exc.message}",
                _pointer_of(["parameters", *exc.path]),
            ) from None
        return _jsonschema.ArgumentsValidator(self.parameters)

    def _declared(self, name: str) -> bool:
        """Whether ``parameters`` declares the property ``name``."""
        declared = self.parameters.get("properties", {})
        return isinstance(declared, dict) and name in declared

    def _check_path_rules(self) -> None:
        """``paths`` and ``directory_within``: declared parameters, known rules, roots."""
        for name, rule in self.paths.items():
            if not self._declared(name):
                raise _FieldError(
                    f"paths names {name!r}, which is not a property of parameters",
                    f"/paths/{name}",
                )
            unknown = sorted(set(rule) - {"within", "exists"})
            if unknown:
                raise _FieldError(f"unknown path rule {unknown[0]!r}", f"/paths/{name}")
            if not _is_root(rule.get("within", "workspace")):
                raise _FieldError(
                    'within is "workspace" or an absolute directory', f"/paths/{name}/within"
                )
        if self.directory_within is not None and not _is_root(self.directory_within):
            raise _FieldError(
                'directory_within is "workspace" or an absolute directory', "/directory_within"
            )

    def _check_options_allowed(self) -> None:
        for index, name in enumerate(self.options_allowed):
            if not self._declared(name):
                raise _FieldError(
                    f"options_allowed names {name!r}, which is not a property of parameters",
                    f"/options_allowed/{index}",
                )

    def _compile_templates(self) -> dict[str, Template]:
        """Every template field, compiled; a malformed one is a load error at its pointer."""
        templates: dict[str, Template] = {}
        for name in _TEMPLATE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                templates[name] = _compile(value, f"/{name}", name)
        if self.io is not None and self.io.stdin is not None:
            templates["io/stdin"] = _compile(self.io.stdin, "/io/stdin", "io/stdin")
        return templates

    def _check_names(self) -> None:
        """A template that reads a name its input cannot hold is a load error: the
        argument templates against ``parameters``, ``result`` against the run."""
        sources = [
            (f"/{name}", self._source(name))
            for name in ("command", "arguments", "directory", "environment", "io/stdin")
            if self._source(name) is not None
        ]
        for pointer, name, hint in unprovided_names(self.parameters, sources):
            raise _FieldError(
                f"the template reads `{name}`, which parameters does not declare ({hint})",
                pointer,
            )
        if self.result is not None:
            for pointer, name, hint in unprovided_names(RESULT_NAMES, [("/result", self.result)]):
                raise _FieldError(
                    f"the result template reads `{name}`, which a result does not have ({hint})",
                    pointer,
                )

    def _source(self, field: str) -> object:
        if field == "io/stdin":
            return None if self.io is None else self.io.stdin
        return getattr(self, field)

    @property
    def uses_credentials(self) -> bool:
        """Whether a call needs a Credential Object: the handle declares ``security``
        or reads ``$credential``."""
        return self.security is not None or bool(_compiled_of(self).credential_fields)

    # -- loading -------------------------------------------------------------

    @classmethod
    def load(cls, source: dict[str, Any] | str | os.PathLike[str]) -> CommandHandle:
        """Load from a dict, or a ``.json``, ``.yaml`` or ``.yml`` file."""
        if isinstance(source, dict):
            return cls.from_dict(source)
        return cls.from_dict(read_document(source, HandleLoadError))

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> CommandHandle:
        try:
            return cls.model_validate(document)
        except ValidationError as exc:
            raise _load_error(exc) from None
        except FormError as exc:
            raise HandleLoadError(f"invalid template: {exc.message}", exc.pointer) from None

    # -- calling -------------------------------------------------------------

    def validate_arguments(self, args: object) -> None:
        """Step 1: the arguments against ``parameters``; every violation is reported."""
        check_arguments(_compiled_of(self).validator, args)

    def prepare(
        self,
        args: object = None,
        policy: Policy | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        credential: Mapping[str, Any] | None = None,
    ) -> PreparedCall[CommandResult]:
        """:meth:`render` as the prepared call every executor method runs: the
        invocation, the Policy it was checked under, and the ``paths`` rules
        the executor checks again right before the launch."""
        policy = policy or Policy()
        invocation = self.render(args, policy, context=context, credential=credential)
        return PreparedCall.command(invocation, policy, path_rules=self.paths, arguments=args)

    @staticmethod
    def _evaluate(
        templates: dict[str, Template],
        name: str,
        args: object,
        option_values: frozenset[str] | None = None,
        application: Mapping[str, object] | None = None,
    ) -> object:
        """Evaluate one field. With ``option_values`` (the arguments), provenance is
        tracked so that the flag guard can tell the model's text from the author's.
        ``application`` holds the call's credential and context."""
        template = templates.get(name)
        if template is None:
            return UNDEFINED
        try:
            if option_values is None:
                return template.evaluate(args, application=application)
            return template.evaluate(
                args, provenance=True, option_values=option_values, application=application
            )
        except OptionLikeError as exc:
            raise refusal_from_encoding(exc, args) from None
        except FormError as exc:
            raise _located(exc, name) from exc

    def render(
        self,
        args: object = None,
        policy: Policy | None = None,
        *,
        context: Mapping[str, object] | None = None,
        credential: Mapping[str, object] | None = None,
    ) -> Invocation:
        """Validate and evaluate everything; return what would run. Spawns nothing.

        ``context`` holds the application's values for ``$context``;
        ``credential`` is the Credential Object ``$credential`` reads. Neither
        is reachable from ``args``. Variables and stdin that hold a credential
        are named in the Invocation, so that every display of it masks them.

        The checks run in a fixed order, and the first that fails is the
        refusal: arguments, credential, command, arguments' tokens, program
        choice, directory, paths, program, environment, stdin, argv text.
        """
        policy = policy or Policy()
        args = {} if args is None else args
        # Inside a loop of calls each function a render runs starts cold (the
        # child's run evicted the caches), at a few microseconds each: the
        # usual steps are written inline here rather than called.
        compiled: _Compiled = self.__pydantic_private__["_compiled"]  # type: ignore[index]
        check_arguments(compiled.validator, args)
        application = (
            None
            if context is None and credential is None and not compiled.credential_fields
            else self._application(compiled, context, credential)
        )
        templates = compiled.templates
        command = compiled.command or self._render_command(templates, args, application)
        argv = self._render_arguments(templates, args, application)
        if not policy.allow_computed_command:
            self._check_program_choice(command, policy, compiled)
        cwd = self._render_directory(templates, args, application, policy)
        if self.paths:
            check_paths(self.paths, args, cwd, policy)
        program = resolve_command(command, cwd, policy, shown=compiled.written_command)
        env = self._render_environment(compiled, args, application, policy)
        io = self.io or _DEFAULT_IO
        stdin = (
            self._render_stdin(templates, args, application, io)
            if "io/stdin" in templates
            else None
        )
        problem = argv_problem([program, *argv], env)
        if problem is not None:
            raise ArgvTextError(problem, "/arguments", _token_index(problem))
        timeout = min(self.timeout, policy.timeout) if self.timeout else policy.timeout
        max_output = (
            min(self.max_output, policy.max_output) if self.max_output else policy.max_output
        )
        return Invocation.build(
            argv=(program, *argv),
            argv0=command,
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=io.stdout,
            stderr=io.stderr,
            encoding=io.encoding,
            timeout=timeout,
            max_output=max_output,
            kill_grace=policy.kill_grace,
            handle_name=self.name,
            no_new_privs=not policy.allow_setuid,
            limits=policy.child_limits,
            cgroup=policy.cgroup_per_call,
            policy=policy,
            masked_environment=_NO_VALUES
            if credential is None
            else self._masked(env, credential, compiled),
            stdin_masked="io/stdin" in compiled.credential_fields,
            shown=None
            if credential is None
            else MaskedView(
                partial(self._shown_fields, args, templates, context, credential, env, stdin, io)
            ),
            bubblewrap=(),  # set by the executor for its sandbox
        )

    # The steps of render. Each takes what render already read (see _compiled_of).

    def _application(
        self,
        compiled: _Compiled,
        context: Mapping[str, object] | None,
        credential: Mapping[str, object] | None,
    ) -> Mapping[str, object] | None:
        """What ``$context`` and ``$credential`` read; a handle that reads
        ``$credential`` is refused without a Credential Object."""
        if compiled.credential_fields and credential is None:
            raise CommandError(
                "this handle reads $credential, and no Credential Object was given "
                "(the application's credential resolver supplies it)",
                "/security",
            )
        if context is None and credential is None:
            return None
        return {"context": context or {}, "credential": credential}

    def _render_command(
        self, templates: dict[str, Template], args: object, application: Mapping[str, object] | None
    ) -> str:
        """The program as the template gives it, before it is resolved."""
        command = self._evaluate(templates, "command", args, None, application)
        if not isinstance(command, str):
            raise TemplateEvaluationError("command must evaluate to a string", "/command")
        return command

    def _render_arguments(
        self,
        templates: dict[str, Template],
        args: object,
        application: Mapping[str, object] | None,
    ) -> list[str]:
        """The argv after the program, with the flag guard applied."""
        options_allowed = self.options_allowed
        allowed = allowed_values(options_allowed, args) if options_allowed else _NO_VALUES
        template = templates.get("arguments")  # self._evaluate, inline: see render
        try:
            arguments = (
                UNDEFINED
                if template is None
                else template.evaluate(
                    args, provenance=True, option_values=allowed, application=application
                )
            )
        except OptionLikeError as exc:
            raise refusal_from_encoding(exc, args) from None
        except FormError as exc:
            raise _located(exc, "arguments") from exc
        if arguments is UNDEFINED or arguments is None:
            return []
        if isinstance(arguments, str):
            argv = [arguments]  # one argument, never split
        elif isinstance(arguments, list):
            argv = arguments
            for token in argv:  # a loop here, not a function: see render
                if not isinstance(token, str):
                    raise _not_tokens()
        else:
            raise _not_tokens()
        check_option_like(argv, allowed, args)
        return list(map(str, argv))  # provenance marks end here

    def _render_directory(
        self,
        templates: dict[str, Template],
        args: object,
        application: Mapping[str, object] | None,
        policy: Policy,
    ) -> str:
        """The working directory: the template's, else the workspace, else the caller's."""
        directory = (
            self._evaluate(templates, "directory", args, None, application)
            if "directory" in templates
            else UNDEFINED
        )
        if isinstance(directory, str):
            cwd = resolve_directory(directory)
            if self.directory_within is not None:
                check_directory_within(cwd, self.directory_within, policy)
            return cwd
        if directory is not UNDEFINED and directory is not None:
            raise TemplateEvaluationError("directory must evaluate to a string", "/directory")
        if policy.workspace is not None:  # the workspace is the default directory
            return resolve_directory(policy.workspace, "/directory")
        return resolve_directory(None)

    def _render_environment(
        self,
        compiled: _Compiled,
        args: object,
        application: Mapping[str, object] | None,
        policy: Policy,
    ) -> dict[str, str]:
        """The child's whole environment: the template's variables and the policy's."""
        environment = (
            self._evaluate(compiled.templates, "environment", args, _NO_VALUES, application)
            if "environment" in compiled.templates
            else UNDEFINED
        )
        return resolve_environment(
            None if environment is UNDEFINED else environment,
            policy,
            written=compiled.written_environment,
        )

    def _render_stdin(
        self,
        templates: dict[str, Template],
        args: object,
        application: Mapping[str, object] | None,
        io: IoSpec,
    ) -> bytes | None:
        """Standard input's bytes, or None when it stays closed."""
        if "io/stdin" not in templates:
            return None
        value = self._evaluate(templates, "io/stdin", args, None, application)
        if isinstance(value, str):
            codec = "utf-8" if io.encoding == "binary" else io.encoding
            try:
                return value.encode(codec)
            except UnicodeEncodeError as exc:
                raise TemplateEvaluationError(
                    f"io.stdin has a character (U+{ord(value[exc.start]):04X}) that "
                    f"{codec} cannot encode",
                    "/io/stdin",
                ) from None
        if isinstance(value, bytes):
            return bytes(value)
        if value is not UNDEFINED and value is not None:
            raise TemplateEvaluationError(
                "io.stdin must evaluate to a string or binary value", "/io/stdin"
            )
        return None

    def _shown_fields(
        self,
        args: object,
        templates: dict[str, Template],
        context: Mapping[str, object] | None,
        credential: Mapping[str, object],
        env: Mapping[str, str],
        stdin: bytes | None,
        io: IoSpec,
    ) -> ShownFields:
        """The environment and stdin as a display shows them, only the credential
        masked (``_shown``); run when the call is first described."""
        return shown_fields(
            partial(self._evaluate_field, args, templates),
            context,
            credential,
            env,
            stdin,
            "utf-8" if io.encoding == "binary" else io.encoding,
            self._credential_variables(env),
            "io/stdin" in _compiled_of(self).credential_fields,
        )

    def _evaluate_field(
        self,
        args: object,
        templates: dict[str, Template],
        name: str,
        application: Mapping[str, object],
    ) -> object:
        """``environment`` or ``io/stdin`` evaluated as render does, with other
        application values (a masked credential, for display)."""
        option_values = frozenset[str]() if name == "environment" else None
        return self._evaluate(templates, name, args, option_values, application)

    def _credential_variables(self, env: Mapping[str, str]) -> frozenset[str]:
        """The variables whose template reads ``$credential``."""
        environment = self.environment
        if "environment" not in _compiled_of(self).credential_fields:
            return frozenset()
        if isinstance(environment, dict) and not any(k.startswith("$") for k in environment):
            return frozenset(name for name, v in environment.items() if _reads_credential(v))
        return frozenset(env)  # built by a directive: any of its values may hold it

    def _masked(
        self,
        env: Mapping[str, str],
        credential: Mapping[str, object] | None,
        compiled: _Compiled,
    ) -> frozenset[str]:
        """The variables whose values hold a credential: those whose template reads
        ``$credential``, and any whose value contains one of the credential's values."""
        if credential is None:
            return _NO_VALUES
        masked = set(self._credential_variables(env))
        secrets = secret_values(credential)
        masked |= {
            name
            for name, value in env.items()
            if any(len(s) >= MIN_REDACTED and s in value for s in secrets)
        }
        return frozenset(masked)

    def _written_command(self) -> str | None:
        """The command as written, when it holds no template (so no model data)."""
        command = self.command
        return command if isinstance(command, str) and "{{" not in command else None

    def _written_directory(self) -> bool:
        directory = self.directory
        return directory is None or (isinstance(directory, str) and "{{" not in directory)

    def _written_environment(self) -> frozenset[str]:
        """The variables whose values the handle writes itself (no model data)."""
        environment = self.environment
        directives = (
            [k for k in environment if k.startswith("$")] if isinstance(environment, dict) else []
        )
        if not isinstance(environment, dict) or any(k != "$comment" for k in directives):
            return frozenset()  # built by a directive: every value may hold model data
        return frozenset(
            name
            for name, value in environment.items()
            if (isinstance(value, str) and "{{" not in value)
            or (isinstance(value, (int, float, bool)) and value is not None)
            or _application_value(value)
        )

    def _check_program_choice(self, command: str, policy: Policy, compiled: _Compiled) -> None:
        """Refuse a program whose path depends on the model's arguments: a computed
        command, or a relative one in a computed directory (red-team finding 5)."""
        if policy.allow_computed_command:
            return
        if compiled.written_command is None:
            raise CommandError(
                "the program is computed from the arguments; the policy does not allow the "
                "model to choose what runs (Policy.allow_computed_command)",
                "/command",
            )
        if "/" in command and not command.startswith("/") and not compiled.written_directory:
            raise CommandError(
                "the relative command is looked up in a directory computed from the "
                "arguments, so the model would choose what runs; write the directory, or an "
                "absolute command (Policy.allow_computed_command allows it)",
                "/command",
            )

    @property
    def has_result_template(self) -> bool:
        return self.result is not None

    def succeeded(self, result: CommandResult) -> bool:
        """Whether the run succeeded: it exited (no signal, no timeout) with one of
        ``success_exit_codes``."""
        return (
            not result.timed_out
            and result.signal is None
            and result.exit_code in self.success_exit_codes
        )

    def outcome(self, result_json: dict[str, Any]) -> tuple[bool, object]:
        """``(is_error, value)`` of the ``result`` template over the result. The
        template reads the result's JSON and ``success``; when its value is an
        object with a boolean ``is_error``, that decides, and the key is taken out
        of what is shown. Otherwise a call is an error when it did not succeed."""
        value = self.shape_result(result_json)
        success = _succeeded_json(result_json, self.success_exit_codes)
        if isinstance(value, dict) and isinstance(value.get("is_error"), bool):
            value = dict(value)
            return value.pop("is_error"), value
        return not success, value

    def shape_result(self, result_json: dict[str, Any]) -> object:
        """What the model sees: the ``result`` template over the result (with
        ``success``, the run judged by ``success_exit_codes``), or None when the
        handle has none (the result itself is then what there is)."""
        template = _compiled_of(self).templates.get("result")
        if template is None:
            return None
        result_json = {
            **result_json,
            "success": _succeeded_json(result_json, self.success_exit_codes),
        }
        try:
            value = template.evaluate(result_json)
        except FormError as exc:
            raise TemplateEvaluationError(exc.message, f"/result{exc.pointer}") from None
        return None if value is UNDEFINED else value


# What a result template reads: CommandResult.to_json() and ``success``.
RESULT_NAMES = frozenset(
    {
        "argv",
        "exit_code",
        "signal",
        "stdout",
        "stderr",
        "timed_out",
        "stdout_truncated",
        "stderr_truncated",
        "duration_s",
        "stdout_replaced",
        "stderr_replaced",
        "stdout_bytes",
        "stderr_bytes",
        "binary",
        "success",
    }
)


def _succeeded_json(result_json: Mapping[str, Any], codes: list[int]) -> bool:
    return (
        not result_json.get("timed_out")
        and result_json.get("signal") is None
        and result_json.get("exit_code") in codes
    )


def _compiled_of(handle: CommandHandle) -> _Compiled:
    """``handle._compiled``, from pydantic's dict of private values: reading the
    attribute fails the ordinary lookup before pydantic's ``__getattr__`` finds
    it, about 2 us, several percent of a render."""
    private = handle.__pydantic_private__
    assert private is not None  # _check_and_compile sets it
    compiled: _Compiled = private["_compiled"]
    return compiled


_DEFAULT_IO = IoSpec()  # frozen: one shared default instead of a model built per call
_NO_VALUES: frozenset[str] = frozenset()


def _located(error: FormError, field: str) -> TemplateEvaluationError:
    """A template's evaluation error, located at its field."""
    located = TemplateEvaluationError(error.message, f"/{field}{error.pointer}")
    located.form_error = error  # e.g. an ArgsError, with its token, index and code point
    return located


def _not_tokens() -> TemplateEvaluationError:
    return TemplateEvaluationError(
        "arguments must evaluate to a string or an array of strings "
        '(use {"$encode": "args", ...} to build tokens from other values)',
        "/arguments",
    )


@dataclass(frozen=True, slots=True)
class _Compiled:
    """What a handle's fields compile to, built once at load."""

    templates: dict[str, Template]
    validator: Any  # the parameters' jsonschema validator
    credential_fields: frozenset[str]  # the fields whose templates read $credential
    written_command: str | None  # the command, when no template builds it
    written_directory: bool  # the directory holds no template
    written_environment: frozenset[str]  # the variables whose values the handle writes
    command: str | None  # the command's value when its template is a constant string


MAX_VIOLATIONS = 20
# Deeper arguments are refused before validation: jsonschema recurses several
# frames per level, so a recursive schema would exhaust Python's stack near 200
# levels. Real tool arguments are a few levels deep.
MAX_ARGUMENT_DEPTH = 64


def _deeper_than(value: object, limit: int) -> str | None:
    """The JSON Pointer of the first value nested more than ``limit`` levels, or None."""
    # Depths only: the path is rebuilt for a refusal, which is rare.
    pending: list[tuple[dict[Any, Any] | list[Any], int]] = []
    if isinstance(value, (dict, list)):
        pending.append((value, 0))
    while pending:
        node, depth = pending.pop()
        if depth >= limit:
            return _pointer_of(_path_to_depth(value, limit))
        children = node.values() if isinstance(node, dict) else node
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


def _path_to_depth(value: object, limit: int) -> tuple[str | int, ...]:
    """The keys down to the first node at depth ``limit``."""
    pending: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while pending:
        node, path = pending.pop()
        if isinstance(node, (dict, list)):
            if len(path) >= limit:
                return path
            items = node.items() if isinstance(node, dict) else enumerate(node)
            pending.extend((child, (*path, key)) for key, child in items)
    return ()


def check_arguments(validator: Any, args: object) -> None:
    """Raise :class:`ArgumentsError` listing how ``args`` fails the schema.

    At most :data:`MAX_VIOLATIONS` are collected: a huge hostile argument
    object could otherwise cost a full validation pass and a message as large.
    """
    flat = type(args) is dict  # an object of scalars, the usual arguments, has no depth
    if flat:
        for child in args.values():  # type: ignore[attr-defined]
            if isinstance(child, (dict, list)):
                flat = False
                break
    deep = None if flat else _deeper_than(args, MAX_ARGUMENT_DEPTH)
    if deep is not None:
        raise ArgumentsError(
            [Violation(deep, f"nested deeper than {MAX_ARGUMENT_DEPTH} levels", "depth")]
        )
    quick = validator.quick if type(validator) is _jsonschema.ArgumentsValidator else None
    if quick is not None:
        try:
            if quick(args):
                return  # the quick check's certain yes: the usual case
        except RecursionError:
            pass  # jsonschema decides, and says why
    try:
        errors = validator.iter_errors(args)
        first = next(errors, None)
        if first is None:  # valid: the usual case, without collecting
            return
        found = [first, *itertools.islice(errors, MAX_VIOLATIONS)]
    except RecursionError:  # a recursive schema over data within the depth limit
        raise ArgumentsError(
            [Violation("", "the arguments are nested too deeply to validate", "depth")]
        ) from None
    errors = sorted(found[:MAX_VIOLATIONS], key=lambda e: list(e.absolute_path))
    if errors:
        raise ArgumentsError(
            [
                Violation(
                    _pointer_of(e.absolute_path), _describe(e), str(e.validator), _names_of(e)
                )
                for e in errors
            ],
            more=len(found) > MAX_VIOLATIONS,
        )


def _names_of(error: Any) -> tuple[str, ...]:
    """The property names a ``required`` or ``additionalProperties`` violation is about,
    so that a message to the model can name the parameter."""
    instance = error.instance
    if not isinstance(instance, dict):
        return ()
    if error.validator == "required":
        # One error per missing property; its name is the quoted head of the message.
        return tuple(
            name
            for name in error.validator_value
            if name not in instance and str(error.message).startswith(repr(name))
        )[:1]
    if error.validator == "additionalProperties":
        schema = error.schema if isinstance(error.schema, dict) else {}
        known = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        return tuple(
            name
            for name in instance
            if name not in known and not any(_jsonschema.search(p, name) for p in patterns)
        )
    return ()


_BOUNDS = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
    "multipleOf": "a multiple of",
}
_COUNTS = {
    "minLength": ("at least", "characters long"),
    "maxLength": ("at most", "characters long"),
    "minItems": ("at least", "items"),
    "maxItems": ("at most", "items"),
    "minProperties": ("at least", "properties"),
    "maxProperties": ("at most", "properties"),
}
# These messages name only schema text or property names, never a value.
_NAMES_ONLY = frozenset({"required", "dependentRequired", "additionalProperties"})


def _describe(error: Any) -> str:
    """What the schema wanted, in words built from the schema alone.

    jsonschema's own messages quote the offending value, and an argument may
    be a secret (a token, a password): refusals never echo one.
    """
    keyword = str(error.validator)
    expected = error.validator_value
    if keyword in _NAMES_ONLY:
        return str(error.message)
    if keyword == "type":
        types = expected if isinstance(expected, list) else [expected]
        return "must be of type " + " or ".join(str(t) for t in types)
    if keyword == "enum":
        return f"must be one of {_json.stringify(expected)}"
    if keyword == "const":
        return f"must be {_json.stringify(expected)}"
    if keyword == "pattern":
        return f"must match the pattern {expected!r}"
    if keyword == "format":
        return f"must be a valid {expected}"
    if keyword in _BOUNDS:
        return f"must be {_BOUNDS[keyword]} {_json.stringify(expected)}"
    if keyword in _COUNTS:
        bound, unit = _COUNTS[keyword]
        return f"must be {bound} {expected} {unit}"
    if keyword == "uniqueItems":
        return "must not contain duplicate items"
    if keyword in ("anyOf", "oneOf"):
        return (
            "must match "
            + ("exactly one" if keyword == "oneOf" else "at least one")
            + (" of the allowed schemas")
        )
    if keyword == "not":
        return "must not match the excluded schema"
    if keyword == "False":
        return "is not allowed here (the schema is false)"
    return f"fails the schema's {keyword!r} keyword"


def _pointer_of(path: Iterable[str | int]) -> str:
    pointer = ""
    for part in path:
        pointer = json_pointer.child(pointer, part)
    return pointer


_HINTS = {
    "title": str,
    "readOnlyHint": bool,
    "destructiveHint": bool,
    "idempotentHint": bool,
    "openWorldHint": bool,
}
# Field names that would hold a secret: a Security Object names a credential,
# it never carries one (Tool Handle 4.2).
_SECRET_NAMES = ("secret", "password", "token", "keyvalue", "apikeyvalue", "privatekey")


def _is_root(within: object) -> bool:
    """A root a path is kept in: "workspace" or an absolute directory."""
    return isinstance(within, str) and (within == "workspace" or os.path.isabs(within))


def _check_security(security: object) -> None:
    if security is None:
        return
    many = isinstance(security, list)
    objects: list[object] = security if isinstance(security, list) else [security]
    for index, item in enumerate(objects):
        where = f"/security/{index}" if many else "/security"
        scheme = item.get("scheme") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(scheme, str) or not scheme:
            raise _FieldError("a Security Object needs a 'scheme' (a non-empty string)", where)
        for key in item:
            if key.replace("_", "").replace("-", "").lower() in _SECRET_NAMES:
                raise _FieldError(
                    f"a Security Object names a credential and never holds one: remove {key!r} "
                    "and let the application's resolver supply it",
                    f"{where}/{key}",
                )


def _check_output_schema(schema: dict[str, Any]) -> None:
    if schema.get("type") != "object":
        raise _FieldError(
            'output_schema must be a JSON Schema with type: "object" (as MCP requires)',
            "/output_schema",
        )
    try:
        _jsonschema.check_schema(schema)
    except _jsonschema.load().SchemaError as exc:  # evaluated only on a refusal
        raise _FieldError(
            f"output_schema is not a valid JSON Schema: {exc.message}",
            _pointer_of(["output_schema", *exc.path]),
        ) from None


def _check_annotations(annotations: dict[str, Any] | None) -> None:
    for key, value in (annotations or {}).items():
        kind = _HINTS.get(key)
        if kind is None:
            raise _FieldError(
                f"unknown annotation {key!r}; use {', '.join(_HINTS)}", f"/annotations/{key}"
            )
        if not isinstance(value, kind):
            raise _FieldError(
                f"annotation {key!r} must be a {'string' if kind is str else 'boolean'}",
                f"/annotations/{key}",
            )


def _token_index(problem: str) -> int | None:
    """N of the ``argv[N]`` a problem names, or None."""
    match = re.match(r"argv\[(\d+)\]", problem)
    return int(match.group(1)) if match else None


def _application_value(value: object) -> bool:
    """A value the application supplies: ``{"$credential": ...}`` or ``{"$context": ...}``."""
    return isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _APPLICATION


_APPLICATION = ("$credential", "$context")


def _reads_credential(value: object) -> bool:
    """Whether the raw template ``value`` holds a ``$credential`` directive anywhere."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if "$credential" in node:
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


class _FieldError(CommandHandleError, ValueError):
    """A check of the whole handle that failed at a known place (``pointer``).

    A ValueError, so that pydantic reports it among the validation errors,
    which :func:`_load_error` turns into one HandleLoadError."""

    def __init__(self, message: str, pointer: str) -> None:
        super().__init__(message)
        self.pointer = pointer


def _constant_string(template: Template) -> str | None:
    """The value of a template that is a non-empty constant string, else None."""
    if not template.is_constant:
        return None
    value = template.evaluate()
    return value if isinstance(value, str) and value else None


def _compile(value: object, pointer: str, field: str) -> Template:
    try:
        return compile_shared(value, registry_for(field))
    except FormError as exc:
        raise _FieldError(f"invalid Tool Form: {exc.message}", pointer + exc.pointer) from None


def _load_error(exc: ValidationError) -> HandleLoadError:
    problems = []
    first_pointer = ""
    for error in exc.errors():
        pointer = "".join(f"/{part}" for part in error["loc"])
        located = error.get("ctx", {}).get("error")
        if isinstance(located, _FieldError):
            pointer = located.pointer  # a whole-handle check that knows the field
        first_pointer = first_pointer or pointer
        if error["type"] == "extra_forbidden":
            message = f"unknown field {str(error['loc'][-1])!r}"
        elif error["type"] == "missing":
            message = f"missing field {str(error['loc'][-1])!r}"
        else:
            message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{pointer or '/'}: {message}" if pointer else message)
    return HandleLoadError("invalid Command Handle: " + "; ".join(problems), first_pointer)
