"""The native core's search knobs (native/core/src/search/params.h and
params.cpp) against their definition in lc0_rocm/search/params.py: the same
names, types and defaults, read from the C++ source (no compiler needed)."""
from __future__ import annotations

import pathlib
import re

from lc0_rocm.search.params import (FPU_STRATEGY_CODES, NATIVE_KNOBS, OPTIONS, RESOLVED_BY_ENGINE,
                                    SearchParams)

SEARCH_SRC = pathlib.Path(__file__).resolve().parent.parent / "native" / "core" / "src" / "search"
CPP_TYPES = {"double": "float", "int": "spin", "long long": "spin", "bool": "check"}


def header_fields() -> dict[str, tuple[str, str]]:
    """params.h's SearchParams members: name -> (C++ type, default text)."""
    text = (SEARCH_SRC / "params.h").read_text()
    body = text[text.index("struct SearchParams {"):]
    body = body[:body.index("\n  // (cpuct init")]           # the members end where the methods start
    body = re.sub(r"//[^\n]*", "", body)
    fields = {}
    for ctype, decls in re.findall(r"^\s*(double|int|bool|long long)\s+([^;]+);", body, re.M):
        for decl in decls.split(","):
            name, _, default = (part.strip() for part in decl.partition("="))
            fields[name] = (ctype, default)
    return fields


def cpp_number(text: str) -> float:
    enums = dict(re.findall(r"(k\w+) = (\d+)", (SEARCH_SRC / "params.h").read_text()))
    words = {"true": 1.0, "false": 0.0, **{k: float(v) for k, v in enums.items()}}
    return words[text] if text in words else float(text)


def setter_names() -> dict[str, str]:
    """Names SearchParams::set takes (params.cpp) -> how it converts them."""
    text = re.sub(r"#define[^\n]*", "", (SEARCH_SRC / "params.cpp").read_text())
    names = {name: kind for kind, name in re.findall(r"LC0_(REAL|INT|BOOL)\((\w+)\)", text)}
    names.update({name: "INT" for name in re.findall(r'name == "(\w+)"', text)})
    return names


def test_the_core_takes_exactly_the_knobs_python_sends():
    assert set(setter_names()) == set(NATIVE_KNOBS) | set(RESOLVED_BY_ENGINE)
    sent = [name for name, _ in SearchParams().native_settings(16, 2)]
    assert sorted(sent) == sorted(set(NATIVE_KNOBS) | set(RESOLVED_BY_ENGINE))


def test_the_core_declares_each_knob_with_python_type_and_default():
    fields, setters = header_fields(), setter_names()
    problems = []
    for name in NATIVE_KNOBS:
        if name not in fields:
            problems.append(f"{name}: no member in params.h")
            continue
        ctype, default = fields[name]
        spec = OPTIONS[name]
        if spec.type == "combo":
            expected = float(FPU_STRATEGY_CODES[spec.default])
            kind_ok = ctype == "int" and setters[name] == "INT"
        else:
            expected = float(spec.default)
            kind_ok = CPP_TYPES[ctype] == spec.type and setters[name] == {
                "float": "REAL", "spin": "INT", "check": "BOOL"}[spec.type]
        if not kind_ok:
            problems.append(f"{name}: {ctype} / LC0_{setters[name]} for a {spec.type} option")
        if cpp_number(default) != expected:
            problems.append(f"{name}: params.h default {default}, params.py {spec.default}")
    assert not problems, problems


def test_the_check_reads_what_it_checks():
    """The parser sees the members (so a knob dropped from params.h would be seen)."""
    fields = header_fields()
    assert fields["CPuct"] == ("double", "1.745") and fields["NNCacheSize"][0] == "long long"
    assert fields["FpuStrategy"] == ("int", "kFpuReduction") and cpp_number("kFpuSame") == 2.0
    assert len(fields) >= len(NATIVE_KNOBS) + len(RESOLVED_BY_ENGINE)
