"""Whisper's decoder adapted to calls in a hall: `python -m lab.train decoder` (docs/hall-model.md).

Low-rank updates (LoRA) of the decoder's dense weights, trained here with torch on the CPU, over Whisper's frozen
encoder: each example is encoded once, as the engine encodes an utterance (10 s window, the noise floor), and
its states (500 x 512, float16) are kept. The decoder is taught to write what was said, in the words the engine's
prompt uses (" B forty-four.", a phrase as a sentence, patter as itself, nothing at all for babble alone), after
one of the prompts the engine gives at a step, so that what the constrained search and the free sentence read
is the same decoder the training saw. The updates are merged into the numpy decoder once at load
(`WhisperDecoder.adapted`); the engine's arithmetic is unchanged.

The examples are the call head's (`head_data`: its voices, split by speaker, its halls, its babble halves), each
saying either put in babble as an endpointer cuts it or in seconds of continuous babble cut by the hall's own
endpointer, babble it joined included: a voice's calls and other speech, its sayings of the rule (claims and cards
as often as the rest) and its calls naming no ball, written as said (three sets, `plan`).
"""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assistant.audio import RATE
from assistant.engines.whisper_decoder import ADAPTABLE, WhisperDecoder
from assistant.engines.whisper_engine import ADAPTER
from assistant.grammar import Grammar
from assistant.messages import Ball, Role
from lab import head_data
from lab.bench import audio as gen
from lab.bench import hallset, real

SEED = head_data.SEED + 20
"""The seed of the adapter's data and training (the call head's data uses SEED .. SEED + 5)."""
CALLS_PER_VOICE = 12
OTHERS_PER_VOICE = 4
SAID_PER_VOICE = 8
"""Sayings of the rule that are no call, a second set per voice (not the real voices, who say digits only): a
claim ("bingo", "we have a bingo") and a card's numbers a quarter each, the rest of the rule's phrases. Without
it the adapter heard the floor's "bingo" and card as calls (its data then held 12 calls to under 2 phrases a
voice)."""
MISNAMED_PER_VOICE = 2
"""Calls naming no ball ("B thirty two"), written as said, a third set per voice: with calls of real balls alone
the adapter learnt that a letter goes with its numbers and wrote "B thirty two" as "b thirteen", so that a caller's
bad call (A(5)) went unnoticed."""
RANK = 8
ALPHA = 16.0
EPOCHS = 2
BATCH = 16
LEARNING_RATE = 1e-3
CUT_SHARE = 0.5
"""Of the sayings, the share put in continuous babble and cut by the hall's endpointer."""
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


@dataclass(frozen=True)
class Said:
    """One example: the samples the encoder hears and the words the decoder is to write ("" for babble alone)."""

    samples: np.ndarray
    words: str
    label: int
    kind: str
    snr: float | None


def written(words: str) -> str:
    """The words as the engine's prompt writes them: " B forty-four.", " Last ball.", "" for nothing said."""
    if not words:
        return ""
    text = " " + words[0].upper() + words[1:]
    for tens in TENS:
        for unit in UNITS:
            text = text.replace(f"{tens} {unit}", f"{tens}-{unit}")
            text = text.replace(f"{tens.capitalize()} {unit}", f"{tens.capitalize()}-{unit}")
    text = text.replace(" i ", " I ")
    return text if text.endswith((".", "?", "!")) else text + "."


def _crowds(seed: int) -> list[Any]:
    """The crowds a voice's sayings are heard in: three of the real babble's train half, one made."""
    crowds: list[Any] = [real.real_crowd(random.Random(seed + k), part="train") for k in range(3)]
    return [*crowds, gen.Crowd(random.Random(seed + 9))]


Saying = Callable[[], tuple[np.ndarray, str, int, str]] | None
"""Makes one saying when called: (samples, words, label, kind); None: a stretch of babble alone."""


def examples(voice: str, index: int, seed: int, grammar: Grammar, calls: int, others: int) -> Iterator[Said]:
    """`calls` balls said by `voice` (the voices take turns through the 75), `others` sayings that are no call
    and a stretch of babble alone per four of them, each through its own hall, in the train half of the babble."""
    sentences = head_data.phrases(grammar)
    rng = random.Random(f"{seed}:{voice}:decoder")
    sayer = head_data.Sayer(voice, grammar)
    pool = sayer.balls()

    def call(label: int) -> Saying:
        ball = Ball(label)
        return lambda: (sayer.call(ball, rng), f"{ball.letter} {grammar.number_words(label)}", label, "call")

    def other() -> tuple[np.ndarray, str, int, str]:
        clip, kind, words = sayer.other(rng, sentences)
        return clip, words, 0, kind

    items = [call(pool[(index * calls + j) % len(pool)].number) for j in range(calls)]
    items += [other] * others + [None] * max(1, others // 4)
    yield from _in_hall(items, _crowds(seed), rng)


def card_words(grammar: Grammar, cards: Sequence[str], rng: random.Random) -> str:
    """A card's manufacturer and serial as the floor reads them: one of the grammar's sayings `cards`, or random
    digits."""
    if rng.random() < 0.5:
        return rng.choice(cards)
    digits = " ".join(grammar.number_words(rng.randrange(10)) for _ in range(rng.randrange(4, 8)))
    maker = " ".join(grammar.number_words(rng.randrange(10)) for _ in range(rng.randrange(1, 4)))
    return rng.choice((f"manufacturer {maker} serial number {digits}", f"serial number {digits}"))


def sayings(voice: str, seed: int, grammar: Grammar, count: int) -> Iterator[Said]:
    """`count` sayings of the rule that are no call in `voice` (`SAID_PER_VOICE`), each through its own hall."""
    sentences = head_data.phrases(grammar)
    claims = [w for w, _ in grammar.samples("bingo")]
    cards = [w for w, _ in itertools.islice(grammar.samples("card"), 400)]
    rng = random.Random(f"{seed}:{voice}:said")

    def saying(j: int) -> tuple[np.ndarray, str, int, str]:
        if j % 4 == 0:
            words = rng.choice(claims)
        elif j % 4 == 1:
            words = card_words(grammar, cards, rng)
        else:
            words = rng.choice(sentences)
        return hallset._level(head_data.say(words, voice)), words, 0, "phrase"

    yield from _in_hall([functools.partial(saying, j) for j in range(count)], _crowds(seed), rng)


def misnamed(voice: str, seed: int, grammar: Grammar, count: int) -> Iterator[Said]:
    """`count` calls naming no ball in `voice` (`MISNAMED_PER_VOICE`), written as said, each through its own hall."""
    sayer = head_data.Sayer(voice, grammar)
    rng = random.Random(f"{seed}:{voice}:misnamed")

    def saying() -> tuple[np.ndarray, str, int, str]:
        clip, words = sayer.misnamed(rng)
        return clip, words, 0, "misnamed call"

    yield from _in_hall([saying] * count, _crowds(seed), rng)


def _in_hall(items: Sequence[Saying], crowds: list[Any], rng: random.Random) -> Iterator[Said]:
    """Each saying through its own hall at an SNR of `head_data.SNRS`, cut by an endpointer or by the hall's own
    from continuous babble (`CUT_SHARE`)."""
    for make in items:
        snr = rng.choice(head_data.SNRS)
        crowd = rng.choice(crowds)
        cut = rng.random() < CUT_SHARE
        if make is None:
            alone = head_data.as_cut(None, None, crowd, rng) if cut else None
            yield Said(head_data.in_babble(None, None, crowd, rng) if alone is None else alone, "", 0, "babble", None)
            continue
        clip, words, label, kind = make()
        heard = head_data.through_hall(clip, rng)
        found = head_data.as_cut(heard, snr, crowd, rng) if cut else None
        yield Said(head_data.in_babble(heard, snr, crowd, rng) if found is None else found, words, label, kind, snr)


Job = tuple[str, str, int, int, int, int]
"""("decoder", voice, index, seed, calls, others): one voice's examples, made and encoded in a worker;
("said", voice, index, seed, 0, count): its sayings of the rule (`sayings`); ("misnamed", ...): its calls naming no
ball (`misnamed`)."""


def _job(job: Job) -> dict[str, np.ndarray]:
    what, voice, index, seed, calls, others = job
    grammar = Grammar.load()
    encoder = head_data._encoder()
    if what == "said":
        found = list(sayings(voice, seed, grammar, others))
    elif what == "misnamed":
        found = list(misnamed(voice, seed, grammar, others))
    else:
        found = list(examples(voice, index, seed, grammar, calls, others))
    window = round(encoder.settings.window * RATE)
    states = [
        encoder.encode(np.clip(e.samples[:window], -32768, 32767).astype(np.int16)).astype(np.float16) for e in found
    ]
    return {
        "x": np.stack(states),
        "words": np.array([e.words for e in found]),
        "label": np.array([e.label for e in found], dtype=np.int32),
        "kind": np.array([e.kind for e in found]),
        "voice": np.array([voice] * len(found)),
        "snr": np.array([-99.0 if e.snr is None else e.snr for e in found], dtype=np.float32),
    }


def plan(seed: int) -> dict[str, list[Job]]:
    """Training: the call head's training voices (espeak, festival, real FSDD, Kokoro); validation: its
    validation voices (other espeak variants, a Kokoro style never trained on). Held-out voices never come here:
    they are judged through the engine (`python -m lab.bench hall --sets held-out`)."""
    train, valid = head_data.training_voices(head_data.SEED)
    neural_train, neural_valid = head_data.kokoro_voices(head_data.SEED)
    speaking = [v for v in train + neural_train if not v.startswith("real:")]
    return {
        "train": [
            ("decoder", v, k, seed, CALLS_PER_VOICE, OTHERS_PER_VOICE) for k, v in enumerate(train + neural_train)
        ],
        "train-said": [("said", v, k, seed + 2, 0, SAID_PER_VOICE) for k, v in enumerate(speaking)],
        "train-misnamed": [("misnamed", v, k, seed + 4, 0, MISNAMED_PER_VOICE) for k, v in enumerate(speaking)],
        "valid": [("decoder", v, k, seed + 1, 10, OTHERS_PER_VOICE) for k, v in enumerate(valid + neural_valid)],
        "valid-said": [("said", v, k, seed + 3, 0, SAID_PER_VOICE // 2) for k, v in enumerate(valid + neural_valid)],
        "valid-misnamed": [("misnamed", v, k, seed + 5, 0, 1) for k, v in enumerate(valid + neural_valid)],
    }


def sets(seed: int, folder: Path, workers: int, log: Callable[[str], None]) -> dict[str, dict[str, np.ndarray]]:
    """The train and validation sets, from `folder` where they are, made (and kept there) where not."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, jobs in plan(seed).items():
        path = folder / f"decoder-{name}.npz"
        if path.is_file():
            with np.load(path) as data:
                made[name] = {k: data[k] for k in data.files}
            continue
        log(f"making the decoder's {name} set: {len(jobs)} voices")
        made[name] = head_data.dataset(jobs, workers, log, path, work=_job)
    return made


# ----- the decoder in torch, with low-rank updates ------------------------------------------------------------


def prompts(recognizer: Any) -> list[tuple[int, ...]]:
    """The prompts the engine gives (`WhisperRecognizer.prompt`), each as often as its step is heard: the
    calling step most, then a caller's and a floor's channel, the claim, the closing, before the first ball."""
    from assistant.pipeline import role_intents

    grammar = recognizer.grammar
    found: list[tuple[int, ...]] = []
    for intents, weight in (
        (grammar.step_intents("calling"), 4),
        (role_intents(grammar, Role.CALLER), 2),
        (role_intents(grammar, Role.FLOOR), 1),
        (grammar.step_intents("claim"), 1),
        (grammar.step_intents("closing"), 1),
        (grammar.step_intents("before-first-ball"), 1),
    ):
        for prompt in recognizer.prompt(tuple(intents)):
            found += [tuple(prompt.tokens)] * weight
    return found


def torch_decoder(decoder: WhisperDecoder, rank: int, alpha: float) -> Any:
    """Whisper's decoder in torch, its weights frozen, with a low-rank update (a @ b, b starting at zero) beside
    every dense weight of ADAPTABLE: the numpy decoder's arithmetic (tests/test_decoder_adapter.py)."""
    import torch
    from torch import nn

    class Dense(nn.Module):
        def __init__(self, weight: np.ndarray, bias: np.ndarray) -> None:
            super().__init__()
            self.register_buffer("w", torch.from_numpy(np.array(weight, dtype=np.float32)))
            self.register_buffer("bias", torch.from_numpy(np.array(bias, dtype=np.float32)))
            self.a = nn.Parameter(torch.randn(weight.shape[0], rank) / np.sqrt(weight.shape[0]))
            self.b = nn.Parameter(torch.zeros(rank, weight.shape[1]))

        def forward(self, x: Any) -> Any:
            return x @ self.w + self.bias + (x @ self.a) @ self.b * (alpha / rank)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("embedding", torch.from_numpy(decoder.embedding16.astype(np.float32)))
            self.register_buffer("positions", torch.from_numpy(decoder.positions))
            self.layers = nn.ModuleList()
            for layer in decoder.layers:
                module = nn.Module()
                for name in ("ln1", "ln2", "ln3"):
                    gamma, beta = getattr(layer, name)
                    module.register_buffer(f"{name}_g", torch.from_numpy(gamma))
                    module.register_buffer(f"{name}_b", torch.from_numpy(beta))
                for name in ADAPTABLE:
                    setattr(module, name, Dense(*getattr(layer, name)))
                self.layers.append(module)
            self.register_buffer("final_g", torch.from_numpy(decoder.final[0]))
            self.register_buffer("final_b", torch.from_numpy(decoder.final[1]))

        def forward(self, tokens: Any, memory: Any) -> Any:
            """(batch, length) tokens after the audio's (batch, frames, width) states -> final hidden states."""
            batch, length = tokens.shape
            frames, width, heads = memory.shape[1], decoder.width, decoder.heads
            size = width // heads
            norm = nn.functional.layer_norm
            attend = nn.functional.scaled_dot_product_attention
            me: Any = self
            x = me.embedding[tokens] + me.positions[:length]
            m: Any
            for m in self.layers:
                h = norm(x, (width,), m.ln1_g, m.ln1_b, 1e-5)
                qkv = m.qkv(h).reshape(batch, length, 3, heads, size)
                q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
                x = x + m.out1(attend(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, length, width))
                h = norm(x, (width,), m.ln2_g, m.ln2_b, 1e-5)
                q = m.q(h).reshape(batch, length, heads, size).transpose(1, 2)
                kv = m.kv(memory)
                k = kv[..., :width].reshape(batch, frames, heads, size).transpose(1, 2)
                v = kv[..., width:].reshape(batch, frames, heads, size).transpose(1, 2)
                x = x + m.out2(attend(q, k, v).transpose(1, 2).reshape(batch, length, width))
                h = norm(x, (width,), m.ln3_g, m.ln3_b, 1e-5)
                x = x + m.ff2(nn.functional.gelu(m.ff1(h)))
            return norm(x, (width,), me.final_g, me.final_b, 1e-5)

        def deltas(self) -> dict[str, np.ndarray]:
            """The updates as `WhisperDecoder.adapted` reads them (the scale folded into a)."""
            out = {}
            m: Any
            for index, m in enumerate(self.layers):
                for name in ADAPTABLE:
                    dense = getattr(m, name)
                    out[f"{index}.{name}.a"] = (dense.a.detach() * (alpha / rank)).numpy().astype(np.float32)
                    out[f"{index}.{name}.b"] = dense.b.detach().numpy().astype(np.float32)
            return out

    return Decoder()


# ----- training -------------------------------------------------------------------------------------------------


class _Batches:
    """Teacher-forced batches: each example after a prompt drawn for it, the words to write and the end token;
    the loss is on the words and the end only."""

    def __init__(self, recognizer: Any, data: dict[str, np.ndarray]) -> None:
        self.data = data
        self.prompts = prompts(recognizer)
        self.end = int(recognizer._end)
        tokenizer = recognizer._tokenizer
        self.targets = [
            [*(tokenizer.encode(written(str(w)), add_special_tokens=False).ids if str(w) else []), self.end]
            for w in data["words"]
        ]

    def __call__(self, rows: Sequence[int], rng: random.Random) -> tuple[Any, Any, Any]:
        import torch

        sequences, starts = [], []
        for row in rows:
            prompt = list(rng.choice(self.prompts))
            sequences.append(prompt + self.targets[row])
            starts.append(len(prompt))
        length = max(map(len, sequences))
        tokens = np.full((len(rows), length), self.end, dtype=np.int64)
        labels = np.full((len(rows), length), -100, dtype=np.int64)
        for j, (sequence, start) in enumerate(zip(sequences, starts, strict=True)):
            tokens[j, : len(sequence)] = sequence
            labels[j, start - 1 : len(sequence) - 1] = sequence[start:]
        memory = torch.from_numpy(self.data["x"][np.asarray(rows)].astype(np.float32))
        return torch.from_numpy(tokens), torch.from_numpy(labels), memory


def _loss(model: Any, tokens: Any, labels: Any, memory: Any) -> tuple[Any, Any]:
    """Cross-entropy of the words and the end, and which of those tokens the decoder would write first."""
    import torch

    hidden = model(tokens, memory)
    chosen = labels >= 0
    logits = hidden[chosen] @ model.embedding.T
    return torch.nn.functional.cross_entropy(logits, labels[chosen]), logits.argmax(-1) == labels[chosen]


def judge(model: Any, batches: _Batches, seed: int) -> dict[str, float]:
    """Validation: the loss, and the share of examples whose every token (words and end) the decoder would write
    first, calls and the rest apart."""
    import torch

    rng = random.Random(seed)
    n = len(batches.targets)
    total, whole = 0.0, np.zeros(n, dtype=bool)
    with torch.no_grad():
        for start in range(0, n, 32):
            rows = list(range(start, min(start + 32, n)))
            tokens, labels, memory = batches(rows, rng)
            loss, right = _loss(model, tokens, labels, memory)
            total += float(loss) * len(rows)
            counts = (labels >= 0).sum(-1).tolist()
            parts = torch.split(right, counts)
            whole[rows] = [bool(p.all()) for p in parts]
    calls = batches.data["label"] > 0
    return {"loss": total / n, "calls whole": float(whole[calls].mean()), "others whole": float(whole[~calls].mean())}


def joined(made: dict[str, dict[str, np.ndarray]], name: str) -> dict[str, np.ndarray]:
    """The set `name`, its sayings of the rule (`name`-said) and its calls naming no ball (`name`-misnamed) as one."""
    parts = [made[k] for k in (name, f"{name}-said", f"{name}-misnamed") if k in made]
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def fit(
    recognizer: Any, made: dict[str, dict[str, np.ndarray]], seed: int, epochs: int, log: Callable[[str], None]
) -> tuple[dict[str, np.ndarray], list[dict[str, float]]]:
    """Train the updates; the deltas and the validation after each epoch (the first: before training)."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    model = torch_decoder(recognizer._search.decoder, RANK, ALPHA)
    train, valid = _Batches(recognizer, joined(made, "train")), _Batches(recognizer, joined(made, "valid"))
    params = [p for p in model.parameters() if p.requires_grad]
    n = len(train.targets)
    steps = epochs * ((n + BATCH - 1) // BATCH)
    opt = torch.optim.AdamW(params, LEARNING_RATE, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, LEARNING_RATE, total_steps=steps, pct_start=0.1)
    rng = random.Random(seed)
    order = np.random.default_rng(seed)
    judged = [judge(model, valid, seed)]
    log(f"before training: {judged[-1]}")
    began = time.monotonic()
    for epoch in range(epochs):
        shuffled = order.permutation(n)
        total = 0.0
        for start in range(0, n, BATCH):
            rows = sorted(int(r) for r in shuffled[start : start + BATCH])
            loss, _ = _loss(model, *train(rows, rng))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            schedule.step()
            total += float(loss.detach()) * len(rows)
        judged.append(judge(model, valid, seed))
        seconds = time.monotonic() - began
        log(f"epoch {epoch + 1}/{epochs}: loss {total / n:.3f}, validation {judged[-1]}, {seconds:.0f} s")
    return model.deltas(), judged


WEIGHTS = ADAPTER
"""Where `python -m lab.train decoder` writes the adapter by default."""


def run(seed: int, epochs: int, workers: int, folder: Path, out: Path, command: str, log: Callable[[str], None]) -> str:
    """Make (or reuse from `folder`) the sets, train the updates, write them to `out` with what made them; a table
    of the validation before and after each epoch."""
    from assistant.engines import make_recognizer

    began = time.monotonic()
    made = sets(seed, folder, workers, log)
    recognizer = make_recognizer("whisper", Grammar.load(), None)
    deltas, judged = fit(recognizer, made, seed, epochs, log)
    meta = {
        "seed": seed,
        "rank": RANK,
        "alpha": ALPHA,
        "epochs": epochs,
        "command": command,
        "weights_sha256": head_data.sha256_of(deltas),
        "data": {
            name: {"examples": len(s["label"]), "voices": len(set(s["voice"].tolist()))} for name, s in made.items()
        },
        "validation": judged,
        "minutes": round((time.monotonic() - began) / 60, 1),
    }
    head_data.save(out, deltas, meta)
    rows = [
        "| after epoch | validation loss | calls written whole % | other sayings written whole % |",
        "|---|---|---|---|",
    ]
    for epoch, j in enumerate(judged):
        rows.append(f"| {epoch} | {j['loss']:.3f} | {100 * j['calls whole']:.1f} | {100 * j['others whole']:.1f} |")
    return "\n".join(rows)
