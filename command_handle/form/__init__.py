"""Tool Form (draft-csachs-tool-form-00): compile JSON templates once, evaluate them fast.

>>> from command_handle.form import evaluate
>>> evaluate({"greeting": "Hello, {{user.name}}!"}, {"user": {"name": "Alice"}})
{'greeting': 'Hello, Alice!'}
"""

from ._defaults import DEFAULT_REGISTRY
from ._errors import (
    EvaluationError,
    FormError,
    IncludeError,
    LimitError,
    RegistrationError,
    TemplateSyntaxError,
)
from ._escape import escape
from ._include import IncludeResolver
from ._limits import Limits
from ._names import read_names
from ._registry import Encoding, Registry, Transform
from ._template import Template, compile_template, evaluate, load_template
from ._values import UNDEFINED, EncodedBytes, EncodedStr, Headers, UndefinedType, headers_of

__all__ = [
    "DEFAULT_REGISTRY",
    "UNDEFINED",
    "EncodedBytes",
    "EncodedStr",
    "Encoding",
    "EvaluationError",
    "FormError",
    "Headers",
    "IncludeError",
    "IncludeResolver",
    "LimitError",
    "Limits",
    "RegistrationError",
    "Registry",
    "Template",
    "TemplateSyntaxError",
    "Transform",
    "UndefinedType",
    "compile_template",
    "escape",
    "evaluate",
    "headers_of",
    "load_template",
    "read_names",
]
