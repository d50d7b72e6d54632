"""Tool Form evaluation speed: microseconds per evaluation of compiled templates.

Run: .venv/bin/python benchmarks/form_bench.py [--quick]

Each case is compiled once and evaluated many times; the figure is the median
of several timed rounds. The baseline, measured in the same run, is what an
evaluator that parsed its JSONPath on every call would spend on the queries
alone (jsonpath_rfc9535.find per query), which compile-once avoids.
"""

from __future__ import annotations

import argparse
import functools

import jsonpath_rfc9535
from _timing import median_us

from command_handle.form import compile_template

SECTION_4_1 = {
    "user": {
        "name": {"$": "user.name"},
        "id": {"$": ".user.id"},
        "role": {"$": "$.user.role"},
    }
}
SECTION_4_1_ARGS = {"user": {"name": "Alice", "id": 7, "role": "admin"}}

SECTION_4_5 = {
    "tags": [
        "basic",
        {"$spread": "$.user.groups.*.tags"},
        {"$spread": ["premium", "beta"]},
        {
            "$spread": {
                "$if": "$.isAdmin",
                "$then": {"admin": ["root", "sudo"]},
                "$else": {"user": ["read", "write"]},
            }
        },
    ],
    "config": {
        "logging": True,
        "settings": {"$spread": "$.user.settings.*"},
        "defaults": {"$spread": {"theme": "dark", "debug": True}},
    },
}
SECTION_4_5_ARGS = {
    "user": {
        "groups": [
            {"name": "dev", "tags": ["staff", "early"]},
            {"name": "test", "tags": ["qa", "beta"]},
        ],
        "settings": [
            {"notifications": True, "timezone": "UTC"},
            {"metrics": True, "alerts": False},
        ],
    },
    "isAdmin": True,
}

SECTION_4_8 = {
    "nav": {
        "$each": ["Home", "Products", "About"],
        "$as": "item",
        "text": {"$": "item"},
        "link": "/{{$.item}}",
    }
}

EACH_1000 = {
    "$each": "$.items[*]",
    "$as": "item",
    "id": {"$": "item.id"},
    "label": "#{{item.id}}: {{item.name}}",
}
EACH_1000_ARGS = {"items": [{"id": i, "name": f"item-{i}"} for i in range(1000)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    options = parser.parse_args()
    rounds, scale = (3, 0.1) if options.quick else (9, 1.0)

    cases = [
        ("section 4.1 $ example", SECTION_4_1, SECTION_4_1_ARGS, 20000),
        ("section 4.5 $spread example", SECTION_4_5, SECTION_4_5_ARGS, 5000),
        ("section 4.8 $each example", SECTION_4_8, {}, 10000),
        ("1,000-element $each", EACH_1000, EACH_1000_ARGS, 50),
    ]
    print(f"{'case':<30} {'median us/eval':>15} {'evals/s':>10}")
    for name, template, args, number in cases:
        us = median_us(
            functools.partial(compile_template(template).evaluate, args),
            rounds,
            max(1, int(number * scale)),
        )
        print(f"{name:<30} {us:>15.2f} {1e6 / us:>10.0f}")

    queries = ["$.user.name", "$.user.id", "$.user.role"]
    baseline = median_us(
        lambda: [jsonpath_rfc9535.find(q, SECTION_4_1_ARGS) for q in queries],
        rounds,
        max(1, int(5000 * scale)),
    )
    section_4_1 = compile_template(SECTION_4_1)
    ours = median_us(
        lambda: section_4_1.evaluate(SECTION_4_1_ARGS),
        rounds,
        max(1, int(20000 * scale)),
    )
    print(
        f"baseline: parsing the 3 queries of section 4.1 per call costs {baseline:.2f} us; "
        f"the compiled template takes {ours:.2f} us ({baseline / ours:.1f}x less)"
    )
    print(f"goal: >= 20,000 evals/s of the section 4.1 example: {1e6 / ours:,.0f} evals/s")


if __name__ == "__main__":
    main()
