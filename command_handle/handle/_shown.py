"""How a rendered call's environment and stdin are shown when a credential is in them.

An approver must see, and the plan hash must cover, the model's data in a
variable or stdin that also holds a credential (``"{{$credential}}@{{db}}"``):
masking the whole value let an approved ``SELECT`` on ``staging`` run as a
``DROP`` on ``production-main`` under the same hash (issue 22, finding 14).

Replacing the secret's text in the value is not enough: a template may
transform it (``$encode: base64`` of ``user:password`` for HTTP Basic), and
the transformed secret contains no secret text. So a field whose template
reads ``$credential`` is shown as that same template evaluated with a
*masked* Credential Object, each secret replaced by ``********``: the shown
value is built from the model's data and the author's text, never from the
secret. The secret text is then replaced wherever else it occurs (the model's
data, an inherited variable). Computed only when a display asks for it
(:class:`~command_handle.call.MaskedView`): a call nobody looks at pays one
small object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .. import _json
from .._secrets import MIN_REDACTED, secret_values
from ..call import MASK, ShownFields
from ..errors import HandleError
from ..form import UNDEFINED

__all__ = ["masked_credential", "shown_fields"]

# Evaluates one field ("environment" or "io/stdin") with the given application values.
Evaluate = Callable[[str, Mapping[str, object]], object]


def masked_credential(credential: Mapping[str, object]) -> dict[str, object]:
    """``credential`` with each secret (every string or number but ``scheme``) as MASK."""

    def mask(value: object) -> object:
        if isinstance(value, Mapping):
            return {key: mask(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [mask(item) for item in value]
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return MASK
        return value

    return {key: value if key == "scheme" else mask(value) for key, value in credential.items()}


def shown_fields(
    evaluate: Evaluate,
    context: Mapping[str, object] | None,
    credential: Mapping[str, object],
    env: Mapping[str, str],
    stdin: bytes | None,
    codec: str,
    from_template: frozenset[str],
    stdin_reads_credential: bool,
) -> ShownFields:
    """The shown environment and stdin of one rendered call (what its
    :class:`~command_handle.call.MaskedView` computes). ``from_template`` names
    the variables whose template reads ``$credential``."""
    application = {"context": context or {}, "credential": masked_credential(credential)}
    secrets = tuple(s for s in secret_values(credential) if len(s) >= MIN_REDACTED)
    shown_env = dict(env)
    if from_template:
        computed = _evaluated(evaluate, "environment", application)
        values = computed if isinstance(computed, dict) else {}
        for name in from_template & env.keys():
            shown_env[name] = _variable_text(values.get(name, UNDEFINED))
    for name, value in shown_env.items():
        shown_env[name] = _masked_text(value, secrets)
    shown_stdin = stdin
    if stdin is not None and stdin_reads_credential:
        shown_stdin = _stdin_bytes(_evaluated(evaluate, "io/stdin", application), codec)
    if shown_stdin is not None:
        shown_stdin = _masked_bytes(shown_stdin, secrets, codec)
    return shown_env, shown_stdin


def _evaluated(evaluate: Evaluate, name: str, application: Mapping[str, object]) -> object:
    """The field given the masked credential; UNDEFINED when that evaluation is
    refused (a template that checks the credential's form, say)."""
    try:
        return evaluate(name, application)
    except HandleError:
        return UNDEFINED


def _variable_text(value: object) -> str:
    """A variable's value as the environment gets it; MASK when it cannot be
    shown (it is absent or not a scalar with the masked credential)."""
    try:
        text = _json.scalar_text(value)
    except _json.NonJSONValueError:
        return MASK
    return MASK if text is None else text


def _stdin_bytes(value: object, codec: str) -> bytes | None:
    """Stdin as render encodes it; None (shown as a size only) when it cannot be."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        try:
            return value.encode(codec)
        except UnicodeEncodeError:
            return None
    return None


def _masked_text(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _masked_bytes(data: bytes, secrets: tuple[str, ...], codec: str) -> bytes:
    for secret in secrets:
        try:
            encoded, mask = secret.encode(codec), MASK.encode(codec)
        except UnicodeEncodeError:
            continue
        if encoded in data:
            data = data.replace(encoded, mask)
    return data
