"""lc0's backend-options syntax (lc0_rocm.backends.options): lc0's own
examples (its 2019 "Backend configuration" post, changelog and issue 11),
inheritance and the errors for malformed strings."""
import pytest

from lc0_rocm import backends
from lc0_rocm.backends import options
from lc0_rocm.backends.options import BackendOptionsError


@pytest.mark.parametrize("text,tree", [
    ("", {}),
    ("cow=true,duck=false", {"cow": "true", "duck": "false"}),
    ("cow=4", {"cow": "4"}),
    ("cow=4.0", {"cow": "4.0"}),
    ('cow="Ducks are the best!"', {"cow": "Ducks are the best!"}),
    ("cow='single, quoted (with parentheses)'", {"cow": "single, quoted (with parentheses)"}),
    ("cow(moo=4, cow=7.0)", {"cow": {"moo": "4", "cow": "7.0"}}),
    ("backend=cudnn-fp16", {"backend": "cudnn-fp16"}),
    ("cudnn-fp16", {"cudnn-fp16": {}}),                      # a sub-dictionary with no options
    ("res_block_fusing=false", {"res_block_fusing": "false"}),
    ("max_batch=100", {"max_batch": "100"}),
    ("backend=cuda-fp16,(gpu=0),(gpu=1)",
     {"backend": "cuda-fp16", "[0]": {"gpu": "0"}, "[1]": {"gpu": "1"}}),
    ("(backend=cudnn,gpu=0),(backend=cudnn,gpu=1)",
     {"[0]": {"backend": "cudnn", "gpu": "0"}, "[1]": {"backend": "cudnn", "gpu": "1"}}),
    ("cudnn(gpu=0),cudnn-fp16(gpu=1)", {"cudnn": {"gpu": "0"}, "cudnn-fp16": {"gpu": "1"}}),
    (" gpu = 1 , threads = 4 , ", {"gpu": "1", "threads": "4"}),  # spaces, trailing comma
    ("path=/tmp/a.b_c-d,x=-1.5e-3", {"path": "/tmp/a.b_c-d", "x": "-1.5e-3"}),
    ("(backend=demux,(threads=2),(threads=2)),(backend=cpu)",
     {"[0]": {"backend": "demux", "[0]": {"threads": "2"}, "[1]": {"threads": "2"}},
      "[1]": {"backend": "cpu"}}),
    ("a(),(x=1)", {"a": {}, "[0]": {"x": "1"}}),
])
def test_lc0_examples_parse(text, tree):
    assert options.parse(text) == tree


def test_children_keep_their_written_order():
    tree = options.parse(",".join(f"(gpu={i})" for i in range(12)))
    assert [v["gpu"] for v in tree.values()] == [str(i) for i in range(12)]
    assert list(tree)[10] == "[10]"


@pytest.mark.parametrize("text,message", [
    ("(gpu=0", r"unbalanced '\('"),
    ("a(b(c=1)", r"unbalanced '\('"),
    ("gpu=0)", r"unbalanced '\)'"),
    ("=1", "empty key"),
    ("''=1", "empty key"),
    ("a=1,,b=2", "unexpected ','"),
    ("gpu=", "expected a value for 'gpu'"),
    ("gpu=(1)", "expected a value for 'gpu'"),
    ("gpu=0,gpu=1", "'gpu' is given twice"),
    ("backend(gpu=0),backend(gpu=1)", "'backend' is given twice"),   # lc0's forbidden example
    ("a=1,a(b=2)", "'a' is given twice"),
    ("a='open", "string is not closed"),
    ("a=1;b=2", "unexpected character ';'"),
    ("a b", "unexpected 'b'"),
])
def test_malformed_strings_are_one_clear_error(text, message):
    with pytest.raises(BackendOptionsError, match=message) as info:
        options.parse(text)
    assert repr(text) in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)      # UCI's setoption catches ValueError


def test_children_inherit_their_parents_keys_and_override_them():
    values, children = options.split(options.parse("backend=cpu,threads=2,(gpu=0),(threads=1)"))
    assert values == {"backend": "cpu", "threads": "2"}
    assert options.child_options(values, children["[0]"]) == {"backend": "cpu", "threads": "2", "gpu": "0"}
    assert options.child_options(values, children["[1]"]) == {"backend": "cpu", "threads": "1"}


def test_format_round_trips():
    for text in ["backend=cuda-fp16,(gpu=0),(gpu=1)", "cudnn(gpu=0),b=x", "a='two words'"]:
        assert options.parse(options.format_options(options.parse(text))) == options.parse(text)


def test_keyword_options_merge_and_clash():
    assert options.merge({"a": "1"}, {"b": 2}) == {"a": "1", "b": 2}
    with pytest.raises(BackendOptionsError, match="threads given twice"):
        options.merge({"threads": "1"}, {"threads": 2})


def test_parse_options_checks_backend_names():
    """backends.parse_options: what UCI's BackendOptions and the commands' -o
    go through."""
    assert backends.parse_options("") == {}
    assert backends.parse_options("backend=cpu,(threads=1),cpu(threads=2)") == {
        "backend": "cpu", "[0]": {"threads": "1"}, "cpu": {"threads": "2"}}
    assert backends.parse_options("gpu=1, threads = 4,") == {"gpu": "1", "threads": "4"}
    for bad, message in [("x", "child x: unknown backend 'x'"), ("backend=nope", "unknown backend 'nope'"),
                         ("(backend=cpu),(backend=gpu9000)", "child \\[1\\]: unknown backend 'gpu9000'"),
                         ("(gpu=0", "unbalanced"), ("gpu", "unknown backend 'gpu'"), ("=1", ""),
                         ("a=1,b", "")]:
        with pytest.raises(ValueError, match=message or None):
            backends.parse_options(bad)


def test_plain_backends_take_no_children(maia_path):
    from lc0_rocm.weights import load_weights
    with pytest.raises(backends.BackendError, match="backend cpu takes no child options \\(\\[0\\]\\)"):
        backends.create("cpu", load_weights(maia_path), **options.parse("(threads=1)"))
