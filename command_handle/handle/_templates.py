"""Compiled templates, shared by the handles that write the same one.

A folder of tools repeats its templates (the same ``command``, the same
``arguments`` pattern), and a folder loaded again repeats all of them;
compiling one costs tens of microseconds to a few hundred. A
:class:`~command_handle.form.Template` is immutable and thread-safe, so one
compiled template serves every handle whose field holds the same JSON text,
compiled with the same directive table.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .. import form
from .._json import cache_key
from ..form import Registry, Template

__all__ = ["CACHED_TEMPLATES", "compile_shared"]

# Distinct templates remembered; the least recently used is forgotten first.
CACHED_TEMPLATES = 4096

_compiled: OrderedDict[tuple[Registry, str], Template] = OrderedDict()
_lock = threading.Lock()


def compile_shared(value: object, registry: Registry) -> Template:
    """``form.compile_template(value, registry=registry)``, once per distinct
    value and table. A template that fails to compile is not remembered: its
    refusal is the compiler's own every time. A value that is not plain JSON
    is compiled every time."""
    text = cache_key(value)
    if text is None:
        return form.compile_template(value, registry=registry)
    key = (registry, text)
    with _lock:
        template = _compiled.get(key)
        if template is not None:
            _compiled.move_to_end(key)
            return template
    template = form.compile_template(value, registry=registry)
    with _lock:
        _compiled[key] = template
        while len(_compiled) > CACHED_TEMPLATES:
            _compiled.popitem(last=False)
    return template
