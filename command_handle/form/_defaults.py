"""The default registry: every directive, transform and encoding of the draft."""

from __future__ import annotations

from ._registry import Registry
from .directives.comment import CommentDirective
from .directives.dollar import DollarDirective
from .directives.each import EachDirective
from .directives.encode import EncodeDirective
from .directives.if_ import IfDirective
from .directives.include import IncludeDirective
from .directives.join import JoinDirective
from .directives.match import MatchDirective
from .directives.matches import MatchesDirective
from .directives.meta import MetaDirective
from .directives.spread import SpreadDirective
from .directives.transform import TransformDirective
from .directives.uri import UriDirective
from .directives.use import UseDirective
from .directives.when import WhenDirective
from .encodings.base64 import Base64Encoding
from .encodings.json import JsonEncoding
from .encodings.urlencoded import UrlencodedEncoding
from .transforms.first import first
from .transforms.last import last
from .transforms.length import length
from .transforms.sort import sort

__all__ = ["DEFAULT_REGISTRY"]

DEFAULT_REGISTRY = Registry()
for _directive in (
    MetaDirective(),
    CommentDirective(),
    DollarDirective(),
    UseDirective(),
    UriDirective(),
    IncludeDirective(),
    SpreadDirective(),
    IfDirective(),
    WhenDirective(),
    EachDirective(),
    JoinDirective(),
    MatchDirective(),
    MatchesDirective(),
    TransformDirective(),
    EncodeDirective(),
):
    DEFAULT_REGISTRY.add_directive(_directive)
for _name, _transform in (("length", length), ("sort", sort), ("first", first), ("last", last)):
    DEFAULT_REGISTRY.add_transform(_name, _transform)
for _encoding in (JsonEncoding(), Base64Encoding(), UrlencodedEncoding()):
    DEFAULT_REGISTRY.add_encoding(_encoding)
