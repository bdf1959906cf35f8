"""The bingo grammar: loaded from grammars/bingo.yaml, it parses words into meanings and writes JSGF.

One source feeds the recognizers and the parser, so what the recognizer may hear is exactly what the
procedure understands.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from .messages import Ball, Meaning, Role, Utterance
from .paths import ROOT

BALLS = 75
"""The balls of the game, 1 to 75: a number outside them is no call at all."""
DEFAULT_GRAMMAR = ROOT / "grammars" / "bingo.yaml"
SLOTS = ("call", "noball", "letter", "number", "manufacturer", "serial")
_NUMERAL = "#"  # typed numerals become one token "#47291": read by value or digit by digit as the slot needs


class GrammarError(ValueError):
    """The grammar file is malformed."""


@dataclass(frozen=True)
class Intent:
    name: str
    clause: str | None
    roles: tuple[str, ...]
    templates: tuple[str, ...]
    sequences: tuple[tuple[str, ...], ...]
    """Every template expanded: literal words and slot markers like '{call}'."""
    near: tuple[str, ...] = ()
    """The intents said in nearly the same words that mean otherwise, a word apart ("valid bingo" and "not a valid
    bingo", "bad bingo" and "bingo"): a hearing of one is no surer than the choice between the two
    (`WhisperRecognizer.could_mean`). Symmetric: the grammar file names it on either side."""


@dataclass(frozen=True)
class _Match:
    end: int
    meaning: Meaning


@dataclass
class Parse:
    """What one utterance says: its meanings in order and the words the grammar could not place."""

    meanings: list[Meaning] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)


def _intent(name: str, spec: dict[str, Any]) -> Intent:
    templates = tuple(spec["templates"])
    return Intent(
        name=name,
        clause=spec.get("clause"),
        roles=tuple(spec.get("roles", [])),
        templates=templates,
        sequences=tuple(seq for t in templates for seq in expand(t)),
        near=tuple(str(o) for o in spec.get("near", ())),
    )


def _meaning(intent: str, slots: dict[str, Any], words: str) -> Meaning:
    """The meaning of a matched template from its slot values; a call naming no ball keeps its letter and number."""
    letter, number = slots.get("letter"), slots.get("number")
    if "noball" in slots:
        letter, number = slots["noball"]
    return Meaning(
        intent=intent,
        ball=slots.get("call"),
        number=number,
        manufacturer=slots.get("manufacturer"),
        serial=slots.get("serial"),
        letter=letter,
        words=words,
    )


def expand(template: str) -> list[tuple[str, ...]]:
    """Expand '(a|b)' choices and '[x]' options into plain word sequences."""
    tokens = re.findall(r"\(([^)]*)\)|\[([^\]]*)\]|(\S+)", template)
    choices: list[list[tuple[str, ...]]] = []
    for group, optional, word in tokens:
        if group:
            choices.append([tuple(alt.split()) for alt in group.split("|")])
        elif optional:
            choices.append([()] + [tuple(alt.split()) for alt in optional.split("|")])
        else:
            choices.append([(word,)])
    return [tuple(w for part in combo for w in part) for combo in itertools.product(*choices)]


class Grammar:
    """The bingo domain: letters with ranges, numbers, and the intents of the rule."""

    def __init__(self, data: dict[str, Any], source: Path | None = None) -> None:
        self.source = source
        try:
            self.letter_words: dict[str, str] = {k: v["word"] for k, v in data["letters"].items()}
            self.letter_first: dict[str, int] = {k: int(v["first"]) for k, v in data["letters"].items()}
            aliases = {a: v["word"] for v in data["letters"].values() for a in v.get("also", [])}
            numbers = data["numbers"]
            self.units: list[str] = list(numbers["units"])
            self.teens: list[str] = list(numbers["teens"])
            self.tens: dict[str, int] = {k: int(v) for k, v in numbers["tens"].items()}
            self.scales: dict[str, int] = {k: int(v) for k, v in numbers["scales"].items()}
            self.digit_aliases: dict[str, int] = {k: int(v) for k, v in numbers.get("digit_aliases", {}).items()}
            self.heard_digits: list[str] = list(numbers.get("heard_digits", self.digit_aliases))
            self.max_number = int(numbers.get("max", 99999))
            self.sounds_like: dict[str, str] = {str(k): str(v) for k, v in numbers.get("sounds_like", {}).items()}
            """Words written for a number word heard, said the same ("for": "four"), each to its number word."""
            self.spellings: dict[str, str] = {**aliases, **dict(data.get("spellings", {}))}
            self.fillers: frozenset[str] = frozenset(str(w) for w in data.get("fillers", ()))
            """Words a caller puts inside a sentence of the rule ("an error has been made folks, ..."): skipped
            between two of its words (as whisper's word network allows them), so the rule's words are still there
            in order; anywhere else they are words of their own."""
            self.intents: dict[str, Intent] = {
                str(name): _intent(str(name), spec) for name, spec in data["intents"].items()
            }
            """What the recognizers listen for and the parser reads."""
            self.text_only: dict[str, Intent] = {
                str(name): _intent(str(name), spec) for name, spec in (data.get("text_only") or {}).items()
            }
            """What the parser reads in typed text but the recognizers never listen for."""
            self.steps: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data.get("steps", {}).items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise GrammarError(f"{source or 'grammar'}: malformed grammar ({exc!r})") from exc
        both = set(self.intents) & set(self.text_only)
        if both:
            raise GrammarError(f"{source or 'grammar'}: intents both listened for and text only: {sorted(both)}")
        words = set(self.units) | set(self.teens) | set(self.tens) | set(self.scales)
        strays = {said: word for said, word in self.sounds_like.items() if word not in words}
        if strays:
            raise GrammarError(f"{source or 'grammar'}: sounds_like names words that are not numbers: {strays}")
        near: dict[str, set[str]] = {name: set() for name in self.intents}
        for intent in self.intents.values():
            for other in intent.near:
                if other not in self.intents or other == intent.name:
                    raise GrammarError(f"{source or 'grammar'}: intent {intent.name!r} is near unknown {other!r}")
                near[intent.name].add(other)
                near[other].add(intent.name)
        self.intents = {n: replace(i, near=tuple(sorted(near[n]))) for n, i in self.intents.items()}
        self.known: dict[str, Intent] = {**self.intents, **self.text_only}
        """Every meaning the parser can read."""
        for step, names in self.steps.items():
            missing = [n for n in names if n not in self.intents]
            if missing:
                raise GrammarError(f"{source or 'grammar'}: step {step!r} names unknown intents {missing}")
        for intent in self.known.values():
            for seq in intent.sequences:
                bad = [w for w in seq if w.startswith("{") and w.strip("{}") not in SLOTS]
                if bad:
                    raise GrammarError(f"{source or 'grammar'}: intent {intent.name!r} has unknown slot {bad}")

    @classmethod
    def load(cls, path: Path | None = None) -> Grammar:
        path = path or DEFAULT_GRAMMAR
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise GrammarError(f"cannot read grammar {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise GrammarError(f"grammar {path} is not valid YAML: {exc}") from exc
        return cls(data, path)

    # ----- words -------------------------------------------------------------------------------

    @cached_property
    def digit_words(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.units)}

    def number_words(self, n: int) -> str:
        """Spell a whole number the way a caller says it: 61 -> 'sixty one', 120 -> 'one hundred twenty'."""
        if n < 0 or n > self.max_number:
            raise ValueError(f"number out of range: {n}")
        if n < 10:
            return self.units[n]
        if n < 20:
            return self.teens[n - 10]
        if n < 100:
            tens_word = next(w for w, v in self.tens.items() if v == n // 10 * 10)
            return tens_word if n % 10 == 0 else f"{tens_word} {self.units[n % 10]}"
        hundred, thousand = self._scale_word(100), self._scale_word(1000)
        if n < 1000:
            head = f"{self.units[n // 100]} {hundred}"
            return head if n % 100 == 0 else f"{head} {self.number_words(n % 100)}"
        head = f"{self.number_words(n // 1000)} {thousand}"
        return head if n % 1000 == 0 else f"{head} {self.number_words(n % 1000)}"

    def _scale_word(self, value: int) -> str:
        return next(w for w, v in self.scales.items() if v == value)

    def call_words(self, ball: Ball, digit_by_digit: bool = False) -> str:
        """How a caller says a ball: 'o sixty one', or digit by digit 'o six one'."""
        letter = self.letter_words[ball.letter]
        if digit_by_digit and ball.number >= 10:
            return f"{letter} {self.units[ball.number // 10]} {self.units[ball.number % 10]}"
        return f"{letter} {self.number_words(ball.number)}"

    def spoken(self, ball: Ball) -> str:
        """A ball as a person reads it aloud: 'B seven'."""
        return f"{ball.letter} {self.number_words(ball.number)}"

    # ----- normalizing typed or recognized text ---------------------------------------------------

    def normalize(self, text: str) -> list[str]:
        """Words of the grammar from text as a person writes it ('B-7', '$300', 'Bingo!')."""
        text = text.lower().replace("’", "'")
        text = re.sub(r"\$\s*([\d,]+)", lambda m: m.group(1).replace(",", "") + " dollars", text)
        text = re.sub(r"(\d),(\d{3})", r"\1\2", text)
        text = re.sub(r"\b([bingo])\s*-?\s*(\d+)\b", r"\1 \2", text)
        words: list[str] = []
        for raw in re.findall(r"[a-z']+|\d+|&", text):
            word = raw.strip("'")
            if not word:
                continue
            if word.isdigit():
                words.append(_NUMERAL + word)
                continue
            word = self.spellings.get(word, word)
            words.extend(word.split())
        return words

    # ----- slot readers: each returns every (end, value) that can start at i --------------------------

    def _under_100(self, tokens: Sequence[str], i: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        if i >= len(tokens):
            return out
        word = tokens[i]
        if word in self.digit_words:
            out.append((i + 1, self.digit_words[word]))
        elif word in self.teens:
            out.append((i + 1, 10 + self.teens.index(word)))
        elif word in self.tens:
            out.append((i + 1, self.tens[word]))
            if i + 1 < len(tokens) and tokens[i + 1] in self.digit_words and tokens[i + 1] != self.units[0]:
                out.append((i + 2, self.tens[word] + self.digit_words[tokens[i + 1]]))
        return out

    def numbers_in(self, tokens: Sequence[str]) -> list[int]:
        """The numbers under 100 said in these words, in order, each read as far as it goes ("eighty eight": 88)."""
        out: list[int] = []
        i = 0
        while i < len(tokens):
            found = self._under_100(tokens, i)
            if not found:
                i += 1
                continue
            i, value = max(found)
            out.append(value)
        return out

    def _under_1000(self, tokens: Sequence[str], i: int) -> list[tuple[int, int]]:
        out = list(self._under_100(tokens, i))
        hundred = self._scale_word(100)
        for end, value in list(out):
            if 1 <= value <= 99 and end < len(tokens) and tokens[end] == hundred:
                base = value * 100
                out.append((end + 1, base))
                nxt = end + 1
                if nxt < len(tokens) and tokens[nxt] == "and":
                    nxt += 1
                out.extend((e, base + v) for e, v in self._under_100(tokens, nxt) if v > 0)
        return out

    def read_number(self, tokens: Sequence[str], i: int) -> list[tuple[int, int]]:
        """A whole number in words (or a typed numeral), every way it can end."""
        if i < len(tokens) and tokens[i].startswith(_NUMERAL):
            return [(i + 1, int(tokens[i][1:]))]
        out = [(e, v) for e, v in self._under_1000(tokens, i) if v > 0]
        thousand = self._scale_word(1000)
        for end, value in list(out):
            if value < 100 and end < len(tokens) and tokens[end] == thousand:
                base = value * 1000
                out.append((end + 1, base))
                nxt = end + 1
                if nxt < len(tokens) and tokens[nxt] == "and":
                    nxt += 1
                out.extend((e, base + v) for e, v in self._under_1000(tokens, nxt) if v > 0)
        return [(e, v) for e, v in out if v <= self.max_number]

    def read_letter(self, tokens: Sequence[str], i: int) -> list[tuple[int, str]]:
        if i < len(tokens):
            for letter, word in self.letter_words.items():
                if tokens[i] == word:
                    return [(i + 1, letter)]
        return []

    def _letter_and_number(self, tokens: Sequence[str], i: int) -> list[tuple[int, str, int]]:
        """A letter, then a number said in words, digit by digit, or typed: (end, letter, number) every way."""
        out: list[tuple[int, str, int]] = []
        for after_letter, letter in self.read_letter(tokens, i):
            candidates: list[tuple[int, int]] = []
            if after_letter < len(tokens) and tokens[after_letter].startswith(_NUMERAL):
                candidates.append((after_letter + 1, int(tokens[after_letter][1:])))
            else:
                candidates.extend(self._under_100(tokens, after_letter))
                if after_letter + 1 < len(tokens):
                    d1, d2 = tokens[after_letter], tokens[after_letter + 1]
                    if d1 in self.digit_words and d2 in self.digit_words and self.digit_words[d1] > 0:
                        candidates.append((after_letter + 2, self.digit_words[d1] * 10 + self.digit_words[d2]))
            out.extend((end, letter, n) for end, n in candidates)
        return out

    def in_column(self, letter: str, number: int) -> bool:
        """The number is one of the 15 balls under this letter."""
        first = self.letter_first[letter]
        return first <= number < first + 15

    def read_call(self, tokens: Sequence[str], i: int) -> list[tuple[int, Ball]]:
        """A letter and a number in its range: words, digit by digit, or a typed numeral."""
        return [(end, Ball(n)) for end, letter, n in self._letter_and_number(tokens, i) if self.in_column(letter, n)]

    def read_noball(self, tokens: Sequence[str], i: int) -> list[tuple[int, tuple[str, int]]]:
        """A letter with one of the 75 numbers that is not under it ("B thirty two", "O five"): a call naming no
        ball, which only a mis-call can be."""
        return [
            (end, (letter, n))
            for end, letter, n in self._letter_and_number(tokens, i)
            if 1 <= n <= BALLS and not self.in_column(letter, n)
        ]

    def read_digits(self, tokens: Sequence[str], i: int) -> list[tuple[int, str]]:
        """A card number read one character at a time: optional spelled letters, then digits."""
        out: list[tuple[int, str]] = []
        prefix = ""
        j = i
        while j < len(tokens) and len(tokens[j]) == 1 and tokens[j].isalpha() and tokens[j] not in self.digit_aliases:
            nxt = tokens[j + 1] if j + 1 < len(tokens) else ""
            if tokens[j] == "a" and not (self._is_digit(nxt) or (len(nxt) == 1 and nxt.isalpha())):
                break  # 'a' as the article, not the letter A
            prefix += tokens[j].upper()
            j += 1
        digits = ""
        while j < len(tokens) and self._is_digit(tokens[j]):
            digits += tokens[j][1:] if tokens[j].startswith(_NUMERAL) else str(self._digit_value(tokens[j]))
            j += 1
            out.append((j, prefix + digits))
        return out

    def _is_digit(self, word: str) -> bool:
        return word in self.digit_words or word in self.digit_aliases or (word.startswith(_NUMERAL))

    def _digit_value(self, word: str) -> int:
        return self.digit_words[word] if word in self.digit_words else self.digit_aliases[word]

    # ----- parsing -----------------------------------------------------------------------------

    def _match(self, intent: str, seq: Sequence[str], tokens: Sequence[str], i: int) -> Iterator[_Match]:
        """Every way `seq` can match tokens from i, carrying the slot values found."""

        def walk(k: int, j: int, slots: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
            if k == len(seq):
                yield j, slots
                return
            part = seq[k]
            if not part.startswith("{"):
                if j < len(tokens) and tokens[j] == part:
                    yield from walk(k + 1, j + 1, slots)
                elif k > 0 and not seq[k - 1].startswith("{") and j < len(tokens) and tokens[j] in self.fillers:
                    yield from walk(k, j + 1, slots)
                return
            slot = part.strip("{}")
            reader: dict[str, Any] = {
                "call": self.read_call,
                "noball": self.read_noball,
                "letter": self.read_letter,
                "number": self.read_number,
                "manufacturer": self.read_digits,
                "serial": self.read_digits,
            }
            for end, value in reader[slot](tokens, j):
                yield from walk(k + 1, end, {**slots, slot: value})

        for end, slots in walk(0, i, {}):
            if end == i:
                continue
            words = " ".join(t.lstrip(_NUMERAL) for t in tokens[i:end])
            yield _Match(end, _meaning(intent, slots, words))

    def matches_at(self, tokens: Sequence[str], i: int, intents: Iterable[str] | None = None) -> list[_Match]:
        names = list(intents) if intents is not None else list(self.known)
        found: list[_Match] = []
        for name in names:
            for seq in self.known[name].sequences:
                found.extend(self._match(name, seq, tokens, i))
        return found

    def parse_tokens(self, tokens: Sequence[str], intents: Iterable[str] | None = None) -> Parse:
        """Read meanings left to right, always taking the longest one that starts at each word."""
        names = list(intents) if intents is not None else None
        result = Parse()
        i = 0
        while i < len(tokens):
            found = self.matches_at(tokens, i, names)
            if not found:
                result.unknown.append(tokens[i].lstrip(_NUMERAL))
                i += 1
                continue
            longest = max(m.end for m in found)
            best = {m.meaning for m in found if m.end == longest}
            if len(best) > 1:
                result.ambiguous.append(" ".join(tokens[i:longest]))
            result.meanings.append(sorted(best, key=repr)[0])
            i = longest
        return result

    def parse(self, text: str, intents: Iterable[str] | None = None) -> Parse:
        """Parse typed or recognized text into meanings."""
        return self.parse_tokens(self.normalize(text), intents)

    def utterance(
        self,
        start: float,
        end: float,
        role: Role,
        text: str,
        confidence: float = 1.0,
        uncertain: bool = False,
        could_be: tuple[Ball, ...] = (),
    ) -> Utterance:
        """An utterance with its meanings read by this grammar."""
        parsed = self.parse(text)
        return Utterance(
            start=start,
            end=end,
            role=role,
            text=text,
            confidence=confidence,
            uncertain=uncertain,
            meanings=tuple(parsed.meanings),
            unknown=tuple(parsed.unknown),
            could_be=could_be,
        )

    # ----- writing grammars for the recognizers ---------------------------------------------------

    def step_intents(self, step: str | None) -> tuple[str, ...]:
        """The intents heard at a procedure step (every intent when the step is unknown or None)."""
        if step is None or step not in self.steps:
            return tuple(self.intents)
        return self.steps[step]

    def vocabulary(self, intents: Iterable[str] | None = None) -> set[str]:
        """Every word a recognizer needs for these intents."""
        names = list(intents) if intents is not None else list(self.intents)
        words: set[str] = set()
        for name in names:
            for seq in self.intents[name].sequences:
                for part in seq:
                    if not part.startswith("{"):
                        words.add(part)
                    elif part in ("{call}", "{letter}"):
                        words.update(self.letter_words.values())
                        words.update(self.units[1:] + self.teens + list(self.tens))
                        words.add(self.units[0])
                    elif part == "{number}":
                        words.update(self.units + self.teens + list(self.tens) + list(self.scales) + ["and"])
                    else:
                        words.update(self.units + self.heard_digits)
        return words

    def jsgf(self, intents: Iterable[str] | None = None, name: str = "bingo") -> str:
        """A JSGF grammar accepting one or more meanings of these intents in a row."""
        names = list(intents) if intents is not None else list(self.intents)

        def alt(items: Iterable[str]) -> str:
            return " | ".join(items)

        def seq_rule(seq: Sequence[str]) -> str:
            return " ".join(f"<{p.strip('{}')}>" if p.startswith("{") else p for p in seq)

        lines = ["#JSGF V1.0;", f"grammar {name};", "public <utterance> = <item>+;"]
        rules = {n: re.sub(r"[^a-z0-9]", "_", n) for n in names}
        lines.append(f"<item> = {alt(f'<i_{r}>' for r in rules.values())};")
        for n, rule in rules.items():
            lines.append(f"<i_{rule}> = {alt(f'( {seq_rule(s)} )' for s in self.intents[n].sequences)};")
        units, teens = self.units, self.teens
        tens = list(self.tens)
        lines.append(f"<digit> = {alt(units + self.heard_digits)};")
        lines.append(f"<unit> = {alt(units[1:])};")
        lines.append(f"<under_100> = {alt(units[1:] + teens)} | ( ({alt(tens)}) [<unit>] );")
        hundred, thousand = self._scale_word(100), self._scale_word(1000)
        lines.append(f"<under_1000> = <under_100> | ( <under_100> {hundred} [and] [<under_100>] );")
        lines.append(f"<number> = <under_1000> | ( <under_100> {thousand} [and] [<under_1000>] );")
        lines.append("<manufacturer> = <digit>+;")
        lines.append("<serial> = <digit>+;")
        lines.append(f"<letter> = {alt(self.letter_words.values())};")
        call_alts = []
        for letter, word in self.letter_words.items():
            first = self.letter_first[letter]
            spoken = [self.number_words(n) for n in range(first, first + 15)]
            by_digit = [f"{units[n // 10]} {units[n % 10]}" for n in range(max(first, 10), first + 15)]
            call_alts.append(f"( {word} ( {alt(spoken + by_digit)} ) )")
        lines.append(f"<call> = {alt(call_alts)};")
        return "\n".join(lines) + "\n"

    def samples(self, intent: str) -> Iterator[tuple[str, Meaning]]:
        """Every sentence an intent allows, with slots filled from a representative set, and its meaning."""
        balls = [Ball(n) for n in range(1, 76)]
        numbers = [1, 7, 15, 30, 50, 61, 75, 99, 100, 120, 250, 300, 1000, 1200, 2500, 12345]
        digit_strings = ["7", "142", "47291", "0102"]
        for seq in self.known[intent].sequences:
            slot_values: list[list[tuple[str, Any]]] = []
            for part in seq:
                slot = part.strip("{}") if part.startswith("{") else None
                if slot == "call":
                    opts = [(self.call_words(b), b) for b in balls]
                    opts += [(self.call_words(b, digit_by_digit=True), b) for b in balls if b.number >= 10]
                    slot_values.append(opts)
                elif slot == "noball":
                    slot_values.append(list(self._noball_samples()))
                elif slot == "letter":
                    slot_values.append([(w, k) for k, w in self.letter_words.items()])
                elif slot == "number":
                    slot_values.append([(self.number_words(n), n) for n in numbers])
                elif slot in ("manufacturer", "serial"):
                    slot_values.append([(" ".join(self.units[int(c)] for c in s), s) for s in digit_strings])
                else:
                    slot_values.append([(part, None)])
            for combo in itertools.product(*slot_values):
                words = " ".join(w for w, _ in combo)
                slots = {seq[k].strip("{}"): v for k, (_, v) in enumerate(combo) if seq[k].startswith("{")}
                yield words, _meaning(intent, slots, words)

    def _noball_samples(self) -> Iterator[tuple[str, tuple[str, int]]]:
        """Every letter with every number of the 75 not under it, in words and (two digits) digit by digit."""
        for letter, word in self.letter_words.items():
            for n in range(1, BALLS + 1):
                if self.in_column(letter, n):
                    continue
                yield f"{word} {self.number_words(n)}", (letter, n)
                if n >= 10:
                    yield f"{word} {self.units[n // 10]} {self.units[n % 10]}", (letter, n)
