"""Hypothesis strategies for JSON values and templates."""

from __future__ import annotations

from hypothesis import strategies as st

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = (
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | finite_floats | st.text(max_size=12)
)


_KEYS = st.text(max_size=6)


def json_values(keys: st.SearchStrategy[str] = _KEYS) -> st.SearchStrategy[object]:
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)
        ),
        max_leaves=20,
    )


# Text that a template leaves alone: no '{', '}' or '\\'.
plain_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="{}\\"), max_size=12)
plain_keys = plain_text.filter(lambda k: not k.startswith("$"))
plain_scalars = (
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | finite_floats | plain_text
)
plain_templates = st.recursive(
    plain_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(plain_keys, children, max_size=4)
    ),
    max_leaves=20,
)
