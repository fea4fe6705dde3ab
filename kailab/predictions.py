"""Graded predictions: the answer KAI's run gives a lesson's question, and the learner's answer graded against it.

A scenario file declares its questions (``predictions:``; the kinds are schema.PREDICTIONS, built into model's
Prediction kinds). The engine measures each answer on the observation of the expect step the prediction names
(:func:`measure`) — what KAI did in that run, never a number written down. ``kailab lesson`` reads the learner's
answers (:func:`given_options`, :func:`parse`) and grades them (:func:`graded`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import singledispatch

from kailab.checks import Observation, count, evaluate
from kailab.errors import KailabError
from kailab.scenarios.model import (
    NOTHING,
    ChoicePrediction,
    Expectation,
    NumberPrediction,
    Prediction,
    WhichPrediction,
)
from kailab.scenarios.schema import PREDICTION_OF

Given = float | str  # a learner's answer: a number, or one of the options


@dataclass(frozen=True)
class Answer:
    """What KAI did, as the answer to one prediction: the right answers, and the same in words."""

    right: tuple[Given, ...]  # a number (right within the prediction's tolerance), or the options that hold
    shown: str

    def to_dict(self) -> dict:
        return {"right": list(self.right), "shown": self.shown}  # as JSON holds it


@singledispatch
def measure(p: Prediction, obs: Observation) -> Answer | None:
    """The answer to ``p`` in what the cluster shows (the observation of the expect step it names); None when it
    shows none (a fair share the scheduler has not published)."""
    raise TypeError(f"no measure for prediction {type(p).__name__}")


@measure.register
def _(p: NumberPrediction, obs: Observation) -> Answer | None:
    if p.of.measure == "fair_share":
        share = obs.fair_share.get(p.of.queue or "")
        return None if share is None else Answer((share,), f"{share:g}")
    value = count(p.of, obs)
    return Answer((value,), f"{value:g}")


@measure.register
def _(p: ChoicePrediction, obs: Observation) -> Answer:
    held = tuple(name for name, exps in p.choices if all(evaluate(e, obs).passed for e in exps))
    return Answer(held, " or ".join(held) if held else "none of the choices")


@measure.register
def _(p: WhichPrediction, obs: Observation) -> Answer:
    counts = {w: count(Expectation(title="", measure=p.measure, want="", workload=w), obs) for w in p.among}
    top = max(counts.values())
    what = p.measure.replace("_", " ")
    if top == 0:
        return Answer((NOTHING,), f"{NOTHING} ({what}: 0 for each)")
    most = tuple(w for w, c in counts.items() if c == top)
    return Answer(most, " and ".join(most) + f" ({what}: {top:g})")


class PredictionError(KailabError):
    """An answer a prediction cannot take, or a --predict option that names no prediction."""


def how_to_answer(p: Prediction) -> str:
    """How a learner answers ``p``: a number, or one of its options."""
    if not p.options:
        return PREDICTION_OF[p.word].answer
    return "one of: " + ", ".join(p.options)


def parse(p: Prediction, text: str) -> Given:
    """A learner's answer to ``p``: a number ≥ 0, or one of its options (by name, any case, or by its number)."""
    text = text.strip()
    if not p.options:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{text!r} is not a number ≥ 0; {p.key} asks for a number, such as 8")
        return int(value) if value.is_integer() else value
    by_name = {o.lower(): o for o in p.options}
    if text.lower() in by_name:
        return by_name[text.lower()]
    if text.isascii() and text.isdigit() and 1 <= int(text) <= len(p.options):
        return p.options[int(text) - 1]
    numbered = ", ".join(f"{i} {o}" for i, o in enumerate(p.options, 1))
    raise ValueError(f"{text!r} is not one of {p.key}'s choices: {numbered}")


def given_options(predictions: tuple[Prediction, ...], lesson: str, where: str, items: list[str]) -> dict[str, Given]:
    """``--predict KEY=VALUE`` options → the answers, checked before anything runs (``where``: the lesson's file)."""
    by_key = {p.key: p for p in predictions}
    listed = "; ".join(f"{p.key} ({how_to_answer(p)})" for p in predictions) or "none"
    out: dict[str, Given] = {}
    for item in items:
        key, eq, text = item.partition("=")
        if not eq:
            raise PredictionError(
                f"--predict {item!r} is not KEY=VALUE.", hint=f"The {lesson} lesson's predictions: {listed}."
            )
        p = by_key.get(key.strip())
        if p is None:
            raise PredictionError(
                f"The {lesson} lesson has no prediction {key.strip()!r} (--predict {item}).",
                hint=f"Its predictions ({where}): {listed}.",
            )
        if p.key in out:
            raise PredictionError(f"--predict gives {p.key} twice.", hint=f"Give each prediction once: {p.key}=…")
        try:
            out[p.key] = parse(p, text)
        except ValueError as e:
            raise PredictionError(
                f"--predict {item}: {e}.", hint=f"{p.key} asks: {p.ask} Answer with {how_to_answer(p)}."
            ) from None
    return out


@dataclass(frozen=True)
class Graded:
    """One prediction as the learner answered it and as KAI's run answered it. ``right`` is None when there is
    nothing to grade: no answer given, or the run ended before the step that measures it."""

    key: str
    ask: str
    given: str  # as the learner answered; "" for none
    answer: str  # what KAI did, in words; "" when not measured
    right: bool | None

    @property
    def mark(self) -> str:
        return {True: "right", False: "wrong", None: "not graded"}[self.right]

    def to_dict(self) -> dict:
        return {**asdict(self), "mark": self.mark}


def graded(predictions: tuple[Prediction, ...], given: dict[str, Given], answers: dict[str, dict]) -> list[Graded]:
    """Each prediction graded: the learner's answer (``given``) against the measured one (``answers``, from the
    verdict)."""
    out = []
    for p in predictions:
        a = answers.get(p.key)
        answer = Answer(tuple(a["right"]), a["shown"]) if a else None
        mine = given.get(p.key)
        # No option held: KAI did none of the choices, so no answer was right.
        right = None if mine is None or answer is None else bool(answer.right) and _right(p, mine, answer)
        out.append(
            Graded(
                key=p.key,
                ask=p.ask,
                given="" if mine is None else f"{mine:g}" if isinstance(mine, float) else str(mine),
                answer=answer.shown if answer else "",
                right=right,
            )
        )
    return out


def _right(p: Prediction, given: Given, answer: Answer) -> bool:
    if isinstance(p, NumberPrediction):
        return any(abs(float(given) - float(r)) <= p.tolerance for r in answer.right)
    return given in answer.right


def tally(grades: list[dict]) -> str:
    """``2 of 3 right`` over graded predictions (records' dicts); "" when none was graded."""
    marks = [g.get("right") for g in grades if g.get("right") is not None]
    return f"{sum(bool(m) for m in marks)} of {len(marks)} right" if marks else ""
