"""Spoken questions the caller may ask at any time, answered by voice from the master board.

A caller who cannot read the board (or has no hand free) asks "how many balls have been called",
"what was the last call", "was G fifty two called", "read the G balls", "read the numbers not called"
(what a cover-all verification needs, B(8)) or "say that again".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .grammar import Grammar
from .messages import LETTERS, Ball, Meaning, Prompt

ANSWER_PRIORITY = 0
"""Answers are information: any due step or violation goes first (messages.Prompt.priority)."""

SENTENCES = {
    "count-none": "No balls have been called yet.",
    "count-one": "One ball has been called.",
    "count": "{count} balls have been called.",
    "last": "The last call was {ball}.",
    "last-none": "No ball has been called yet.",
    "called-yes": "Yes, {ball} has been called.",
    "called-no": "No, {ball} has not been called.",
    "letter": "Under {letter}, {count} called: {balls}.",
    "letter-none": "No balls called under {letter}.",
    "not-called": "Not called, {count}: {balls}.",
    "not-called-none": "Every ball has been called.",
    "repeat-none": "There is nothing to repeat yet.",
}
"""What the assistant says, one sentence per case; balls and counts are spelled out as the caller says them."""


class BoardView(Protocol):
    """What the answers read from the master board (procedure.Board fits)."""

    @property
    def called(self) -> Sequence[Ball]:
        """Balls in call order, current game, withdrawn ones removed."""
        ...

    @property
    def last(self) -> Ball | None: ...


def answer(
    meaning: Meaning,
    board: BoardView,
    last_prompt: Prompt | None,
    grammar: Grammar,
    time: float = 0.0,
) -> Prompt | None:
    """The spoken answer to a question meaning, or None when the meaning is not a question.

    `time` is when the question ended (the utterance's end): the answer is placed there.
    """
    if meaning.intent == "ask-repeat":
        if last_prompt is None:
            return _prompt(meaning, SENTENCES["repeat-none"], time)
        return Prompt(time, last_prompt.text, _kind(meaning), ANSWER_PRIORITY, last_prompt.clause)
    text = _text(meaning, board, grammar)
    if text is None:
        return None
    clause = "B(8)" if meaning.intent == "ask-not-called" else None
    return _prompt(meaning, text, time, clause)


def _kind(meaning: Meaning) -> str:
    return f"answer-{meaning.intent}"


def _prompt(meaning: Meaning, text: str, time: float, clause: str | None = None) -> Prompt:
    return Prompt(time, text, _kind(meaning), ANSWER_PRIORITY, clause)


def _balls(balls: Sequence[Ball], grammar: Grammar) -> str:
    return ", ".join(grammar.spoken(b) for b in balls)


def _text(meaning: Meaning, board: BoardView, grammar: Grammar) -> str | None:
    called = list(board.called)
    if meaning.intent == "ask-count":
        if not called:
            return SENTENCES["count-none"]
        if len(called) == 1:
            return SENTENCES["count-one"]
        return SENTENCES["count"].format(count=grammar.number_words(len(called)).capitalize())
    if meaning.intent == "ask-last":
        if board.last is None:
            return SENTENCES["last-none"]
        return SENTENCES["last"].format(ball=grammar.spoken(board.last))
    if meaning.intent == "ask-called":
        if meaning.ball is None:
            return None
        key = "called-yes" if meaning.ball in called else "called-no"
        return SENTENCES[key].format(ball=grammar.spoken(meaning.ball))
    if meaning.intent == "ask-letter":
        if meaning.letter is None or meaning.letter not in LETTERS:
            return None
        under = sorted(b for b in called if b.letter == meaning.letter)
        if not under:
            return SENTENCES["letter-none"].format(letter=meaning.letter)
        return SENTENCES["letter"].format(
            letter=meaning.letter, count=grammar.number_words(len(under)), balls=_balls(under, grammar)
        )
    if meaning.intent == "ask-not-called":
        if not called:
            return SENTENCES["count-none"]
        seen = set(called)
        missing = [Ball(n) for n in range(1, 76) if Ball(n) not in seen]
        if not missing:
            return SENTENCES["not-called-none"]
        return SENTENCES["not-called"].format(count=grammar.number_words(len(missing)), balls=_balls(missing, grammar))
    return None
