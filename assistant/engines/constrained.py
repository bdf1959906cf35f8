"""Grammar-constrained decoding: the Whisper decoder may only write what the procedure's step allows.

The step's intents (grammars/bingo.yaml) become a word network: literal words, calls (a letter and a number of
its column, in numerals or in words), numbers and card digits as numerals. A `Walker` reads text character by
character through that network the way Whisper writes it (any case, punctuation between words, "B-7", "B7",
"$300"), so for any partial sentence it knows which tokens may come next and whether the sentence may end.
The beam search scores only those tokens; an unconstrained greedy row beside it tells how much the decoder
would rather have written something else (speech the grammar does not hold).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..grammar import Grammar
from ..messages import Ball
from .whisper_decoder import Array, Cross, WhisperDecoder

SEPARATORS = frozenset(' ,.!?;:-"')
"""Characters Whisper writes between words; they are never part of a word of the grammar."""
NUMBER_SAMPLES = (*range(1, 100), 100, 120, 150, 200, 250, 300, 400, 500, 600, 750, 1000, 1200, 1500, 2000, 2500)
"""Numbers that may also be written in words (the numeral form covers every number)."""
MAX_NUMBER_DIGITS = 6
MAX_CARD_DIGITS = 12
CARD_LETTERS = 3


@dataclass(frozen=True)
class Numeral:
    """An edge label: a numeral of 1..digits digits."""

    digits: int


Label = str | Numeral


@dataclass
class WordNet:
    """A network of words: edges[node] = [(label, next node)], epsilon moves, accepting nodes."""

    edges: list[list[tuple[Label, int]]] = field(default_factory=lambda: [[]])
    epsilon: list[list[int]] = field(default_factory=lambda: [[]])
    accepting: set[int] = field(default_factory=set)

    def node(self) -> int:
        self.edges.append([])
        self.epsilon.append([])
        return len(self.edges) - 1

    def path(self, start: int, labels: Sequence[Label], end: int) -> None:
        node = start
        for label in labels[:-1]:
            nxt = self.node()
            self.edges[node].append((label, nxt))
            node = nxt
        self.edges[node].append((labels[-1], end))


def call_forms(grammar: Grammar, ball: Ball) -> list[list[Label]]:
    """How Whisper may write a call: 'B 7' (also 'B7', 'B-7'), 'B seven', or digit by digit 'O 6 1'."""
    letter = grammar.letter_words[ball.letter]
    forms: list[list[Label]] = [[letter, str(ball.number)], [letter, *grammar.number_words(ball.number).split()]]
    if ball.number >= 10:
        forms.append([letter, str(ball.number // 10), str(ball.number % 10)])
    return forms


def build_net(grammar: Grammar, intents: Iterable[str], repeat: bool = True) -> WordNet:
    """One or more meanings of these intents in a row (`repeat`; otherwise exactly one), as a word network."""
    net = WordNet()
    start, end = 0, net.node()
    net.accepting.add(end)
    if repeat:
        net.epsilon[end].append(start)
    calls = [call_forms(grammar, Ball(n)) for n in range(1, 76)]
    numbers = [grammar.number_words(n).split() for n in NUMBER_SAMPLES]
    contractions = {tuple(v.split()): k for k, v in grammar.spellings.items() if len(v.split()) == 2}
    for name in intents:
        for seq in grammar.known[name].sequences:
            node = start
            chain = [start]
            skip_dollars: set[int] = set()
            for k, part in enumerate(seq):
                nxt = net.node()
                chain.append(nxt)
                if part == "{call}":
                    for forms in calls:
                        for form in forms:
                            net.path(node, form, nxt)
                elif part == "{letter}":
                    for word in grammar.letter_words.values():
                        net.path(node, [word], nxt)
                elif part == "{number}":
                    net.path(node, [Numeral(MAX_NUMBER_DIGITS)], nxt)
                    for words in numbers:
                        net.path(node, words, nxt)
                    if k + 1 < len(seq) and seq[k + 1] == "dollars":
                        after = net.node()  # "$300": the sign stands for the word "dollars"
                        net.path(node, ["$", Numeral(MAX_NUMBER_DIGITS)], after)
                        skip_dollars.add(after)
                elif part in ("{manufacturer}", "{serial}"):
                    # at most CARD_LETTERS spelled letters, then digits: a free loop of letters let the beam
                    # spell "A. A. A." forever on audio it could not read
                    letters = node
                    for _ in range(CARD_LETTERS):
                        more = net.node()
                        net.epsilon[letters].append(more)
                        for letter in "abcdefghijklmnopqrstuvwxyz":
                            net.path(letters, [letter], more)
                        letters = more
                    digits = net.node()
                    net.path(letters, [Numeral(MAX_CARD_DIGITS)], digits)
                    net.path(digits, [Numeral(MAX_CARD_DIGITS)], digits)
                    for word in [*grammar.heard_digits, *grammar.units]:
                        net.path(letters, [word], digits)
                        net.path(digits, [word], digits)
                    net.epsilon[digits].append(nxt)
                else:
                    net.path(node, [part], nxt)
                    if part == "dollars":
                        for after in skip_dollars:
                            net.epsilon[after].append(nxt)
                        skip_dollars = set()
                node = nxt
            net.epsilon[node].append(end)
            for k in range(len(seq) - 1):  # "that's" for "that is"
                short = contractions.get((seq[k], seq[k + 1]))
                if short is not None:
                    net.path(chain[k], [short], chain[k + 2])
            for k in range(1, len(seq)):  # "an error has been made folks, I am ...": light words inside a sentence
                if not seq[k - 1].startswith("{") and not seq[k].startswith("{"):
                    for filler in sorted(grammar.fillers):
                        net.path(chain[k], [filler], chain[k])
    return net


State = frozenset[tuple[int, str]]
"""Where a partial sentence may be: (node, the letters of the word being written there)."""


class Walker:
    """Reads Whisper's text through a word network, character by character (memoized per state)."""

    def __init__(self, net: WordNet) -> None:
        self.net = net
        self._feed: dict[tuple[State, str], State] = {}
        self._chars: dict[tuple[State, str], State] = {}
        self.allowed: dict[tuple[State, bool], _Allowed] = {}
        """What may follow each state, as `ConstrainedSearch.allowed` found it (one search per walker)."""
        self._ends: dict[State, bool] = {}
        self.initial = self._closure({(0, "")})

    def _closure(self, items: Iterable[tuple[int, str]]) -> State:
        out = set(items)
        stack = [item for item in out if item[1] == ""]
        while stack:
            node, _ = stack.pop()
            for nxt in self.net.epsilon[node]:
                if (nxt, "") not in out:
                    out.add((nxt, ""))
                    stack.append((nxt, ""))
        return frozenset(out)

    def _finish(self, node: int, word: str) -> Iterable[int]:
        for label, nxt in self.net.edges[node]:
            if label == word or (isinstance(label, Numeral) and word.isdigit() and len(word) <= label.digits):
                yield nxt

    def _may_start(self, node: int, part: str) -> bool:
        for label, _ in self.net.edges[node]:
            if isinstance(label, Numeral):
                if part.isdigit() and len(part) <= label.digits:
                    return True
            elif label.startswith(part):
                return True
        return False

    def _char(self, state: State, ch: str) -> State:
        key = (state, ch)
        found = self._chars.get(key)
        if found is None:
            found = self._chars[key] = self._step(state, ch)
        return found

    def _step(self, state: State, ch: str) -> State:
        out: set[tuple[int, str]] = set()
        for node, part in state:
            if ch in SEPARATORS:
                if not part:
                    out.add((node, ""))
                    continue
                out.update((nxt, "") for nxt in self._finish(node, part))
                if ch == "," and part.isdigit():
                    out.add((node, part))  # "2,500"
                continue
            if part and ch.isdigit() and not part[-1].isdigit():
                # "B7", "$300": a letter or a sign and then a digit are two words
                for nxt in self._finish(node, part):
                    out.update((n, ch) for n, _ in self._closure({(nxt, "")}) if self._may_start(n, ch))
            if self._may_start(node, part + ch):
                out.add((node, part + ch))
        return self._closure(out) if out else frozenset()

    def feed(self, state: State, text: str) -> State:
        """The state after `text`, or an empty state when the grammar cannot continue that way."""
        key = (state, text)
        found = self._feed.get(key)
        if found is None:
            found = state
            for ch in text.lower():
                found = self._char(found, ch)
                if not found:
                    break
            self._feed[key] = found
        return found

    def may_end(self, state: State) -> bool:
        """Whether the sentence may stop here: a whole number of meanings has been written."""
        found = self._ends.get(state)
        if found is None:
            done = {(node, "") for node, part in state if not part}
            for node, part in state:
                if part:
                    done.update((nxt, "") for nxt in self._finish(node, part))
            found = any(node in self.net.accepting for node, _ in self._closure(done))
            self._ends[state] = found
        return found


_WRITTEN = re.compile(r"^[ a-zA-Z0-9'$,.!?;:\-\"]+$")
PUNCTUATION = (",", ".", "!", "?", "-", " -", "...", ".,", "$", " $")


class TokenTable:
    """The tokens a constrained sentence may use: the grammar's words as Whisper writes them (lower case,
    Capitalized, UPPER, with or without a leading space), numerals of up to three digits, punctuation."""

    def __init__(self, tokenizer: object, end_token: int, words: Iterable[str], shortlist: int = 8000) -> None:
        decode = getattr(tokenizer, "decode")  # noqa: B009 - a tokenizers.Tokenizer; typed loosely
        encode = getattr(tokenizer, "encode")  # noqa: B009
        self.end = end_token
        self.text: dict[int, str] = {}
        keep: set[int] = set()
        for word in words:
            for form in {word, word.capitalize(), word.upper()}:
                for lead in (" ", ""):
                    keep.update(encode(lead + form, add_special_tokens=False).ids)
        for token in range(end_token):
            text = decode([token])
            if re.fullmatch(r" ?\d{1,3}", text) or text in PUNCTUATION:
                keep.add(token)
        for token in sorted(keep):
            text = decode([token])
            if text and _WRITTEN.match(text):
                self.text[token] = text
        self.by_first: dict[str, list[int]] = {}
        for token, text in self.text.items():
            self.by_first.setdefault(text[0].lower(), []).append(token)
        # Scores are normalized over the most frequent tokens (byte-pair merges come in frequency order),
        # the grammar's tokens and the end: the mass outside them is negligible and it spares a 50k-row product.
        self.normalizer = np.array(sorted(set(range(min(shortlist, end_token))) | set(self.text) | {end_token}))
        self.column = {int(t): i for i, t in enumerate(self.normalizer)}


_Allowed = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], list[State]]


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]
    score: float
    """Log-probability of the tokens and the end, under the decoder."""


@dataclass(frozen=True)
class SearchResult:
    finished: list[Hypothesis]
    """Sentences of the grammar, best first."""
    free: Hypothesis
    """What the decoder writes with no grammar (greedy): the yardstick for speech the grammar does not hold."""


@dataclass
class _Active:
    tokens: tuple[int, ...]
    score: float
    state: State
    row: int
    """Row of this hypothesis in the batch cache."""


class ConstrainedSearch:
    """Beam search over the tokens a `Walker` allows, on the numpy decoder."""

    def __init__(self, decoder: WhisperDecoder, table: TokenTable) -> None:
        self.decoder = decoder
        self.table = table
        self.projection: Array = np.ascontiguousarray(decoder.output_embedding(table.normalizer))
        self._bare = {t for t, text in table.text.items() if all(ch in SEPARATORS for ch in text)}

    def allowed(self, walker: Walker, state: State, separated: bool) -> _Allowed:
        """(columns, tokens, next states) of the tokens that may follow `state`; the end token has state ().

        A token of punctuation alone may not open the sentence nor follow another: the beam would fill up with
        runs of dashes and dots that the grammar cannot object to, one character at a time."""
        key = (state, separated)
        found = walker.allowed.get(key)
        if found is None:
            tokens: list[int] = []
            states: list[State] = []
            for first, candidates in self.table.by_first.items():
                if not walker.feed(state, first):
                    continue
                for token in candidates:
                    if separated and token in self._bare:
                        continue
                    nxt = walker.feed(state, self.table.text[token])
                    if nxt:
                        tokens.append(token)
                        states.append(nxt)
            if walker.may_end(state):
                tokens.append(self.table.end)
                states.append(frozenset())
            ids = np.array(tokens, dtype=np.int64)
            columns = np.array([self.table.column[t] for t in tokens], dtype=np.int64)
            found = (columns, ids, states)
            walker.allowed[key] = found
        return found

    def _log_probs(self, hidden: Array) -> Array:
        logits = hidden @ self.projection.T
        top = logits.max(-1, keepdims=True)
        out: Array = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
        return out

    def search(
        self,
        memory: Array,
        prompt: Sequence[int],
        walker: Walker,
        beam: int = 5,
        max_tokens: int = 48,
        margin: float = 10.0,
        max_free: int = 24,
        first_beam: int = 12,
        free_prompt: Sequence[int] | None = None,
    ) -> SearchResult:
        """The best sentences of the grammar for this audio (encoder output), and the free greedy sentence.

        With `free_prompt` the free sentence is decoded on its own from that prompt (an unprimed yardstick: a
        prompt that names calls draws the free sentence to them as much as the grammar's); without it, beside
        the beam from the same prompt."""
        cross: Cross = self.decoder.cross(memory)
        hidden, cache = self.decoder.run(np.array([list(prompt)], dtype=np.int64), cross)
        log_probs = self._log_probs(hidden)
        active = [_Active((), 0.0, walker.initial, 0)]
        finished: list[Hypothesis] = []
        free_tokens: list[int] = []
        free_score = 0.0
        free_row: int | None = 0
        if free_prompt is not None:
            free = self._greedy(cross, free_prompt, max_free)
            free_tokens, free_score, free_row = list(free.tokens), free.score, None
        for step in range(max_tokens):
            # The first token says which sentence it is (a call's letter, a phrase's first word): keep more of them,
            # or a phrase that starts weakly ("valid ...", said unclearly) is gone before its second word.
            width = max(beam, first_beam >> step)
            candidates: list[tuple[float, int, int, State]] = []
            for hyp in active:
                separated = not hyp.tokens or hyp.tokens[-1] in self._bare
                columns, ids, states = self.allowed(walker, hyp.state, separated)
                if len(ids) == 0:
                    continue
                scores = hyp.score + log_probs[hyp.row, columns]
                for j in np.argsort(-scores)[:width]:
                    candidates.append((float(scores[j]), hyp.row, int(ids[j]), states[j]))
            if free_row is not None:
                column = int(np.argmax(log_probs[free_row]))
                token = int(self.table.normalizer[column])
                free_score += float(log_probs[free_row, column])
                if token == self.table.end or len(free_tokens) >= max_free:
                    free_row = None
                else:
                    free_tokens.append(token)
            candidates.sort(key=lambda c: -c[0])
            parents: list[int] = []
            grown: list[tuple[tuple[int, ...], float, State]] = []
            rows_of = {hyp.row: hyp for hyp in active}
            for score, row, token, state in candidates:
                if token == self.table.end:
                    finished.append(Hypothesis(rows_of[row].tokens, score))
                    continue
                if len(grown) < width:
                    parents.append(row)
                    grown.append(((*rows_of[row].tokens, token), score, state))
            best = max((h.score for h in finished), default=-np.inf)
            grown = [g for g in grown if g[1] > best and g[1] > best - margin]
            if not grown and free_row is None:
                break
            if not grown:
                active = []
            feed = [g[0][-1] for g in grown]
            rows = [parents[i] for i in range(len(grown))]
            if free_row is not None:
                feed.append(free_tokens[-1])
                rows.append(free_row)
            if not feed:
                break
            hidden, cache = self.decoder.run(np.array(feed, dtype=np.int64)[:, None], cross, cache.take(rows))
            log_probs = self._log_probs(hidden)
            active = [_Active(g[0], g[1], g[2], i) for i, g in enumerate(grown)]
            if free_row is not None:
                free_row = len(grown)
        finished.sort(key=lambda h: -h.score)
        return SearchResult(finished, Hypothesis(tuple(free_tokens), free_score))

    def free_sentence(self, memory: Array, prompt: Sequence[int], max_tokens: int = 24) -> list[int]:
        """The tokens the decoder writes for this audio after `prompt`, with no grammar."""
        return list(self._greedy(self.decoder.cross(memory), prompt, max_tokens).tokens)

    def _greedy(self, cross: Cross, prompt: Sequence[int], max_tokens: int) -> Hypothesis:
        """What the decoder writes left to itself after `prompt`, one best token at a time."""
        hidden, cache = self.decoder.run(np.array([list(prompt)], dtype=np.int64), cross)
        tokens: list[int] = []
        score = 0.0
        for _ in range(max_tokens + 1):
            log_probs = self._log_probs(hidden)
            column = int(np.argmax(log_probs[0]))
            token = int(self.table.normalizer[column])
            score += float(log_probs[0, column])
            if token == self.table.end or len(tokens) >= max_tokens:
                break
            tokens.append(token)
            hidden, cache = self.decoder.run(np.array([[token]], dtype=np.int64), cross, cache)
        return Hypothesis(tuple(tokens), score)
