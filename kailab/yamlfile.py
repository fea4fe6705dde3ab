"""YAML files checked against declared models, every error with its ``file:line``.

``read`` parses a file and remembers the line of every key and list item (and refuses
duplicate keys, which plain YAML silently merges); ``check`` validates the data with a
pydantic model and turns its first error into one sentence that names the file and line.
Scenario, queue and fleet files all come through here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from kailab.errors import KailabError
from kailab.userfile import read_text

M = TypeVar("M", bound=BaseModel)
E = TypeVar("E", bound=KailabError)

MAX_DEPTH = 64  # mappings and lists inside each other; the lab's own files use fewer than 10
MAX_VALUES = 200_000  # keys, values and items of one document once its aliases (*name) are expanded


class Refused(yaml.YAMLError):
    """Valid YAML that kailab will not read: nested too deep, or aliases that expand it too far."""

    def __init__(self, problem: str, mark):
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _Map(dict):
    """A mapping that knows its own line and the line of each key."""

    line = 0
    lines: dict


class _Seq(list):
    """A list that knows its own line and the line of each item."""

    line = 0
    lines: list


def refuse_merge_keys(node) -> None:
    """A YAML merge key (``<<: *anchor``) hides which keys a mapping has: kailab asks for them written out."""
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise yaml.constructor.ConstructorError(
                None, None, "'<<' (a YAML merge key) is not supported: write the keys out in full", key_node.start_mark
            )


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps lines and refuses a key given twice or a merge key, nesting beyond MAX_DEPTH and documents whose
    aliases expand them beyond MAX_VALUES (a few hundred bytes can otherwise stand for billions of values)."""

    _depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise Refused(
                    f"nested more than {MAX_DEPTH} levels deep; kailab reads at most {MAX_DEPTH}",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node):
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> _Map:
        refuse_merge_keys(node)
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"the key '{key}' is given twice (lines {seen[key]} and {line}); the second would replace the first",
                    key_node.start_mark,
                )
            seen[key] = line
        mapping = _Map(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.lines = {k: line for k, line in seen.items()}
        return mapping

    def construct_sequence(self, node, deep=False):
        seq = _Seq(super().construct_sequence(node, deep=True))
        seq.line = node.start_mark.line + 1
        seq.lines = [n.start_mark.line + 1 for n in node.value]
        return seq


def _check_expansion(root) -> None:
    """Refuse a document whose aliases make it larger than MAX_VALUES values or deeper than MAX_DEPTH levels,
    or refer to a node they are inside. Each node is visited once (aliases share nodes): linear in the file."""
    measured: dict[int, tuple[int, int]] = {}  # id(node) → (values, depth) with aliases expanded
    open_nodes: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in measured:
            continue
        kids = (
            []
            if isinstance(node, yaml.ScalarNode)
            else [n for pair in node.value for n in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if not done:
            if id(node) in open_nodes:
                raise Refused(
                    "an alias (*name) refers to the node it is inside, which would never end", node.start_mark
                )
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in measured)
            continue
        open_nodes.discard(id(node))
        values = 1 + sum(measured[id(k)][0] for k in kids)
        depth = 1 + max((measured[id(k)][1] for k in kids), default=0)
        if values > MAX_VALUES:
            raise Refused(
                f"aliases (*name) expand this document to more than {MAX_VALUES:,} values; "
                "kailab reads at most that many",
                root.start_mark,
            )
        if depth > MAX_DEPTH:
            raise Refused(
                f"aliases (*name) nest this document more than {MAX_DEPTH} levels deep; "
                f"kailab reads at most {MAX_DEPTH}",
                root.start_mark,
            )
        measured[id(node)] = (values, depth)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _Loader.construct_sequence)


class YamlFile(Generic[E]):
    """One file's parsed documents, and how to say where something in them is (as an ``error``)."""

    def __init__(self, path: Path, error: type[E], hint: str | None = None):
        self.path = Path(path)
        self.error = error
        self.hint = hint

    def fail(self, line: int, message: str) -> E:
        return self.error(f"{self.path}:{line}: {message}", hint=self.hint)

    def read_mapping(self, shape: str) -> dict:
        """The file's data, which must be a mapping; ``shape`` says what one holds (for the error)."""
        data = self.read()
        if not isinstance(data, dict):
            found = "an empty file" if data is None else _shown(data)
            raise self.fail(getattr(data, "line", 1), f"{shape}, not {found}")
        return data

    def read(self, documents: bool = False) -> Any:
        """The file's data (a list of documents when ``documents``); errors name file and line."""
        text = read_text(self.path, self.error, self.hint)
        try:
            if documents:
                return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
            return yaml.load(text, Loader=_Loader)
        except Refused as e:
            raise self.fail(e.problem_mark.line + 1, e.problem) from None
        except yaml.YAMLError as e:
            problem = getattr(e, "problem", None) or str(e)
            mark = getattr(e, "problem_mark", None)
            if mark is None or "<stream end>" in problem or "end of stream" in problem:
                # An unclosed bracket or quote: where it was opened says more than the end of the file.
                mark = getattr(e, "context_mark", None) or mark
            raise self.fail(mark.line + 1 if mark else 1, f"not valid YAML: {problem}") from None

    def check(self, model: type[M], data: Any, words: Callable[[ErrorDetails], str | None] | None = None) -> M:
        """``model`` validated from ``data``; the first error becomes one ``file:line: …`` sentence.

        ``words`` may give a model's own wording for an error (return None to keep the default).
        """
        try:
            return model.model_validate(data)
        except ValidationError as e:
            errors = sorted(e.errors(include_url=False), key=lambda err: -len(resolve(data, err["loc"])[1]))
            first = errors[0]
            line, path = resolve(data, first["loc"])
            text = (words(first) if words else None) or describe(first)
            where = dotted(path)
            more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
            raise self.fail(line, f"{where}: {text}{more}" if where else f"{text}{more}") from None

    def line_of(self, data: Any, loc: tuple) -> int:
        return resolve(data, loc)[0]


def resolve(data: Any, loc: tuple) -> tuple[int, list]:
    """The line of ``loc`` in the parsed data, and the part of ``loc`` that names real keys and items.

    Parts of a pydantic location that are not in the data (union tags, model names) are passed over.
    """
    line = getattr(data, "line", 1) or 1
    node, path = data, []
    for part in loc:
        if isinstance(node, _Map) and part in node:
            line = node.lines.get(part, line)
            node = node[part]
        elif isinstance(node, _Seq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lines[part]
            node = node[part]
        else:
            continue
        path.append(part)
    return line, path


def dotted(path: list) -> str:
    """``['steps', 3, 'scale']`` → ``steps[3].scale`` (1-based items read better: steps[4])."""
    out = ""
    for part in path:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(err: ErrorDetails) -> str:
    """A pydantic error in plain words."""
    kind, value, loc = err["type"], err["input"], err["loc"]
    key = next((p for p in reversed(loc) if isinstance(p, str)), "")
    if kind == "extra_forbidden":
        return f"unknown key '{key}'"
    if kind == "missing":
        return f"'{key}' is missing"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        hint = " (a missing ':' after the key?)" if isinstance(value, str) and " " in value.strip() else ""
        return f"want a mapping (key: value), found {_shown(value)}{hint}"
    if kind == "list_type":
        return f"want a list, found {_shown(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float", "greater_than_equal", "less_than_equal", "greater_than"):
        bound = err.get("ctx", {})
        rng = (f" ≥ {bound['ge']}" if "ge" in bound else "") + (f" ≤ {bound['le']}" if "le" in bound else "")
        return f"{value!r} — want a whole number{rng}"
    if kind in ("string_type",):
        return f"want text, found {_shown(value)}"
    if kind == "string_too_long":
        return f"{value!r} is too long ({len(value)} characters, at most {err['ctx']['max_length']})"
    if kind == "string_pattern_mismatch":
        return f"{value!r} is not a valid name: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
    if kind in ("literal_error", "enum"):
        return f"{value!r} — want one of {err.get('ctx', {}).get('expected', '')}"
    if kind == "too_short":
        return "needs at least one item"
    if kind == "bool_type" or kind == "bool_parsing":
        return f"{value!r} — want true or false"
    msg = err["msg"]
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _kind(value: Any) -> str:
    for kind, words in (
        (bool, "the value"),
        (str, "the text"),
        (dict, "a mapping"),
        (list, "a list"),
        ((int, float), "the number"),
        (type(None), "nothing"),
    ):
        if isinstance(value, kind):
            return words
    return "the value"


def _shown(value: Any) -> str:
    """``a mapping``, ``a list``, ``the text 'x'``: what was found, short."""
    kind = _kind(value)
    return kind if isinstance(value, (dict, list)) else f"{kind} {value!r}"
