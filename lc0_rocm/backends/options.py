"""lc0's backend-options syntax (`--backend-opts`, UCI `BackendOptions`) as a tree.

    parse("backend=cuda-fp16,(gpu=0),(gpu=1)")
    -> {"backend": "cuda-fp16", "[0]": {"gpu": "0"}, "[1]": {"gpu": "1"}}

The grammar is lc0's (src/utils/optionsdict.cc): a comma-separated list of
`key=value` entries and sub-dictionaries. A sub-dictionary is `name(list)`,
`name` alone (empty), or `(list)` without a name, which gets the first free
name of the form "[0]", "[1]", ... Values are numbers, identifiers
(letters, digits and `_-./`) or single/double quoted strings; spaces between
tokens are ignored; a trailing comma is allowed. Values stay strings here
(quotes removed); each backend converts what it reads.

Differences from lc0's parser, on purpose: a key given twice, or a name used
both as a key and as a sub-dictionary, is an error (lc0's blog post on backend
configuration says keys cannot repeat; its parser keeps the last value), and
sub-dictionaries keep the order they were written in (lc0 sorts them by
name, so "[10]" came before "[2]").

A sub-dictionary inherits its parents' keys (`child_options`), which is how
`backend=cuda-fp16,(gpu=0),(gpu=1)` gives both children the backend.

A backend that reads typed keys describes each as a `BackendOption` and
reads them with `read_options`: an unknown key, or a value that is not of
its kind, is a `BackendOptionsError` that says what is valid.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from lc0_rocm.backends.base import BackendError

IDENTIFIER_PUNCTUATION = "_-./"
NUMBER_START = "0123456789-."
NUMBER_CHARS = "+-1234567890.eExX"


class BackendOptionsError(BackendError, ValueError):
    """A backend-options string that does not parse."""


class _Lexer:
    """Tokens of lc0's option grammar: (kind, text, offset)."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.kind, self.value, self.offset = "", "", 0
        self.next()

    def error(self, message: str, offset: int | None = None):
        at = self.offset if offset is None else offset
        return BackendOptionsError(f"backend options {self.text!r}: {message} at offset {at}")

    def next(self) -> None:
        text, i = self.text, self.pos
        while i < len(text) and text[i].isspace():
            i += 1
        self.offset = i
        if i == len(text):
            self.kind, self.value, self.pos = "eof", "", i
            return
        c = text[i]
        if c in ",()=":
            self.kind, self.value, self.pos = c, c, i + 1
        elif c in NUMBER_START:
            j = i
            while j < len(text) and text[j] in NUMBER_CHARS:
                j += 1
            self.kind, self.value, self.pos = "value", text[i:j], j
        elif c in "'\"":
            j = text.find(c, i + 1)
            if j < 0:
                raise self.error("string is not closed", len(text))
            self.kind, self.value, self.pos = "string", text[i + 1:j], j + 1
        elif c.isalnum() or c == "/":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in IDENTIFIER_PUNCTUATION):
                j += 1
            self.kind, self.value, self.pos = "identifier", text[i:j], j
        else:
            raise self.error(f"unexpected character {c!r}")


def parse(text: str) -> dict:
    """The option tree of `text`: keys -> str values, sub-dictionaries -> dicts."""
    if not isinstance(text, str):
        raise BackendOptionsError(f"backend options must be a string, got {type(text).__name__}")
    lexer = _Lexer(text)
    tree: dict = {}
    _parse_list(lexer, tree)
    if lexer.kind != "eof":
        what = "unbalanced ')'" if lexer.kind == ")" else f"unexpected {lexer.value!r}"
        raise lexer.error(what)
    return tree


def _parse_list(lexer: _Lexer, into: dict) -> None:
    while True:
        offset = lexer.offset
        if lexer.kind == "(":
            name = _free_name(into)
        elif lexer.kind in ("identifier", "string"):
            name = lexer.value
            if not name:
                raise lexer.error("empty key")
            lexer.next()
        elif lexer.kind == "=":
            raise lexer.error("empty key")
        else:
            return
        if name in into:
            raise lexer.error(f"{name!r} is given twice", offset)
        if lexer.kind == "=":
            lexer.next()
            if lexer.kind not in ("value", "string", "identifier"):
                raise lexer.error(f"expected a value for {name!r}")
            into[name] = lexer.value
            lexer.next()
        else:
            child: dict = {}
            into[name] = child
            if lexer.kind == "(":
                lexer.next()
                _parse_list(lexer, child)
                if lexer.kind != ")":
                    raise lexer.error("unbalanced '(': expected ')'"
                                      if lexer.kind == "eof" else f"unexpected {lexer.value!r}")
                lexer.next()
        if lexer.kind != ",":
            return
        lexer.next()


def _free_name(tree: dict) -> str:
    i = 0
    while f"[{i}]" in tree:
        i += 1
    return f"[{i}]"


# ---------------------------------------------------------------- tree helpers
def split(tree: dict) -> tuple[dict, dict]:
    """(key -> value, name -> sub-dictionary) of one level."""
    values = {k: v for k, v in tree.items() if not isinstance(v, dict)}
    children = {k: v for k, v in tree.items() if isinstance(v, dict)}
    return values, children


def child_options(parent_values: dict, child: dict) -> dict:
    """A sub-dictionary with its parent's keys inherited (its own win)."""
    return {**parent_values, **child}


def check_backend_names(tree: dict, known, inherited: str | None = None) -> None:
    """Every `backend` value, and every child that names its backend by its
    own name (`cpu(threads=1)`, a bare `x`), is one of `known`."""
    values, children = split(tree)
    backend = values.get("backend", inherited)
    if "backend" in values and backend not in known:
        raise BackendOptionsError(f"backend options: unknown backend {backend!r}; known: {', '.join(known)}")
    for name, child in children.items():
        own = child.get("backend")
        used = own if isinstance(own, str) else backend
        if used is None and not name.startswith("["):
            used = name
        if used is not None and used not in known:
            raise BackendOptionsError(f"backend options: child {name}: unknown backend {used!r}; "
                                      f"known: {', '.join(known)}")
        check_backend_names(child, known, used)


def merge(tree: dict, extra: dict) -> dict:
    """`tree` plus keyword options; a key in both is an error."""
    both = sorted(set(tree) & set(extra))
    if both:
        raise BackendOptionsError(f"backend option(s) {', '.join(both)} given twice "
                                  "(in the options string and as keywords)")
    return {**tree, **extra}


def format_options(tree: dict) -> str:
    """The tree in lc0's syntax again (anonymous sub-dictionaries unnamed)."""
    parts = []
    for key, value in tree.items():
        if isinstance(value, dict):
            name = "" if key.startswith("[") else key
            parts.append(f"{name}({format_options(value)})")
        else:
            text = str(value)
            plain = text and all(c.isalnum() or c in IDENTIFIER_PUNCTUATION for c in text)
            parts.append(f"{key}={text if plain else repr(text)}")
    return ",".join(parts)


# ---------------------------------------------------------------- typed keys
TRUE_WORDS = ("true", "on", "yes", "1")
FALSE_WORDS = ("false", "off", "no", "0")
NAME_SEPARATORS = "/,"   # disable=winograd/fused_se, or quoted: disable="winograd,fused_se"


@dataclasses.dataclass(frozen=True)
class BackendOption:
    """One key a backend reads. kind: "str", "int" (minimum..maximum), "bool"
    (true/false, on/off, yes/no, 1/0), "choice" (one of choices) or "names"
    (a set of choices, written name/name or quoted "name,name"); choices may
    be a function that lists them (read when a value needs them)."""
    help: str
    default: object = None
    kind: str = "str"
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] | Callable[[], Iterable[str]] = ()

    def valid_choices(self) -> tuple[str, ...]:
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def valid(self) -> str:
        """What a value may be, in words."""
        if self.kind == "int":
            if self.minimum is not None and self.maximum is not None:
                return f"an integer in {self.minimum}..{self.maximum}"
            return f"an integer >= {self.minimum}" if self.minimum is not None else "an integer"
        if self.kind == "bool":
            return "true or false (on/off, yes/no, 1/0)"
        if self.kind == "choice":
            return "one of " + ", ".join(self.valid_choices())
        if self.kind == "names":
            return "names from " + ", ".join(self.valid_choices()) + " (several as a/b)"
        return "a string"

    def parse(self, backend: str, key: str, value):
        """value (a string from the options text, or a Python value given as a
        keyword) as this key's kind; BackendOptionsError naming what is valid."""
        def bad(why: str = ""):
            return BackendOptionsError(f"{backend}: {key}={value!r} is not {self.valid()}{why}")
        if self.kind == "str":
            if not isinstance(value, str):
                raise bad()
            return value
        if self.kind == "int":
            if isinstance(value, bool):
                raise bad()
            try:
                number = int(value) if isinstance(value, (int, str)) else None
            except ValueError:
                number = None
            if number is None or (self.minimum is not None and number < self.minimum) or \
                    (self.maximum is not None and number > self.maximum):
                raise bad()
            return number
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            word = str(value).strip().lower()
            if word in TRUE_WORDS:
                return True
            if word in FALSE_WORDS:
                return False
            raise bad()
        if self.kind == "choice":
            word = str(value).strip().lower()
            if word not in self.valid_choices():
                raise bad()
            return word
        if self.kind == "names":
            if isinstance(value, str):
                for separator in NAME_SEPARATORS[1:]:
                    value = value.replace(separator, NAME_SEPARATORS[0])
                names = [n.strip() for n in value.split(NAME_SEPARATORS[0]) if n.strip()]
            elif isinstance(value, Iterable):
                names = [str(n) for n in value]
            else:
                raise bad()
            valid = self.valid_choices()
            unknown = [n for n in names if n not in valid]
            if unknown:
                raise bad(f" (unknown: {', '.join(unknown)})")
            return frozenset(names)
        raise ValueError(f"BackendOption {key}: unknown kind {self.kind!r}")


def read_options(backend: str, specs: Mapping[str, BackendOption], given: Mapping) -> dict:
    """Every key of specs: its value in `given` read by its kind, else its
    default. A key specs do not list is an error naming the valid ones."""
    unknown = sorted(k for k in given if k not in specs)
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise BackendOptionsError(f"{backend}: unknown option{plural} {', '.join(unknown)}; "
                                  f"valid options: {', '.join(sorted(specs))}")
    values = {key: spec.default for key, spec in specs.items()}
    for key, value in given.items():
        values[key] = specs[key].parse(backend, key, value)
    return values


def describe_options(specs: Mapping[str, BackendOption]) -> str:
    """One line per key: key=<valid values> (default): meaning."""
    lines = []
    for key, spec in specs.items():
        default = "" if spec.default in (None, frozenset()) else f" (default {format_value(spec.default)})"
        lines.append(f"{key}=<{spec.valid()}>{default}: {spec.help}")
    return "\n".join(lines)


def format_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (set, frozenset)):
        return "/".join(sorted(value))
    return str(value)
