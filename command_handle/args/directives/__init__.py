"""The args directives, one module each; importing this package registers them."""

from . import args_, flags, repeat

__all__ = ["args_", "flags", "repeat"]
