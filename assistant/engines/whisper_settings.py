"""How the Whisper engines listen: `WhisperSettings`, a hall's `[whisper]` section (docs/configuration.md).

Its own module so that the engine (`whisper_engine`, the decoding) and the hearing decision (`decision`, how sure a
call hearing is) both read it, and neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WhisperSettings:
    """How the Whisper adapter listens; each value was measured (docs/bench-accuracy.md)."""

    window: float = 10.0
    """Seconds of audio the encoder sees (the utterance, then silence): 10 s heard calls better than 5 s (95 against
    92 % right on clean cut calls); Whisper's own 30 s cost nine times as much and was no better."""
    beam: int = 5
    """Hypotheses kept by the constrained search."""
    near_meanings: bool = True
    """A sure phrase with a near meaning in the step (`near` in the grammar: a valid bingo and not, "bad bingo" and
    "bingo", yes and no) is at most as sure as Whisper's own decoder, asked to choose between the two alone with no
    prompt, makes it (`could_mean`; about 0.25 s of decoding a near meaning)."""
    near_beam: int = 8
    """Hypotheses kept when a phrase is weighed against a near meaning: with `beam` (5) the search found no sentence
    of "not a valid bingo" in a saying of "that is a valid bingo" in 10 dB of babble; with 8 it did."""
    prompt_phrase_tokens: int = 40
    """Tokens of the prompt given to the step's phrases (the calls come on top)."""
    threads: int = 1
    """CPU threads of the encoder."""
    noise_floor: float = 60.0
    """Standard deviation (16-bit units, about -55 dBFS) of a fixed noise floor under the audio: digitally
    silent stretches (synthetic speech, gated microphones) derail the encoder; on clean espeak calls cut out,
    88 % were heard right without it and 93 % with it."""
    min_confidence: float = 0.9
    """Below this a hearing is uncertain."""
    min_similarity: float = 0.6
    """Below this similarity (of the letters of the words) between the grammar's best sentence and what the
    decoder writes with no grammar, the hearing's confidence is scaled by it: chatter forced onto a call comes
    out unsure (0 false calls in 96 chatter sentences at 10 dB and clean, against 5 by the N-best share
    alone), while "to" for "two" or "I-one-six" for "I 16" do not."""
    phrase_gap: float = 1.0
    """A hearing of a phrase (no call, at least `phrase_words` words) keeps its confidence when the free sentence
    beats it by at most this much log-probability per token, however differently it is written."""
    primed_gap: float = 3.0
    """A phrase the step's prompt says is borne out by the decoder prompted without it when that decoder writes it
    alike (`min_similarity`), or when Whisper's decoder with no prompt at all scores the phrase's own words within
    this many nats (the whole sentence) of what it writes. Left unprimed, Whisper base writes a lone "bingo" as
    "Bindle", "B in the", "being go": a rare word, scored a few nats below its own sentence. Patter the prompt drew
    onto a phrase scored 6.4 nats or more below (the tuning voices' patter in the calling step). Not for a phrase
    whose near meaning the step hears (`near` in the grammar): a word apart, "bad bingo" scored as "bingo"."""
    phrase_words: int = 3
    """Shorter hearings ("bingo", "last ball") must be written alike freely: babble is forced onto them easily."""
    early: float = 0.1
    """Quiet seconds after which the utterance is decoded ahead of the endpointer's verdict."""
    whole_early: bool = True
    """A call decoded ahead that is sure and cannot go on ("B seven", not "G fifty", which may be "G fifty five")
    is given out at once, without waiting for the endpointer's hangover (`HALL_CUTTING`: 0.6 s, longer than a
    caller's pause between letter and number), and closes its utterance: what follows is another
    (docs/bench-accuracy.md)."""
    free_prompt: str = "step"
    """The prompt of the free sentence, the yardstick of a hearing: 'step' (the grammar search's own prompt) or
    'bare' (Whisper's start tokens alone). Measured on the hall set's tuning voices, 'bare' heard fewer calls
    sure (clean 18 of 30 against 25 for en-us)."""
    calibrated: bool = True
    """A call's confidence from the fitted model (CALIBRATION) instead of N-best share x likeness, where the model
    file is there."""
    join_gap: float = 0.8
    """Seconds an utterance whose free sentence holds no number waits for the rest of the call (0: never)."""
    fuse_window: float = 10.0
    """Seconds within which a call's second saying is weighed with its first."""
    compatible: float = 0.02
    """Two sayings heard as different balls are one doubtful hearing when each gave the other at least this; a call
    hearing leaves room for another ball (`Heard.could_be`) that has at least this of its N-best."""
    head_room: float = 0.1
    """A call hearing leaves room for another ball (`Heard.could_be`) that the call head hears with at least this.
    Espeak en-029's "N thirty one" heard "n forty one" gave N 31 0.10-0.12; on the validation voices'
    dumps 1-2 % of the sure call hearings have such a ball (20 % from 0.02: the head spreads thinly over many)."""
    adapter: str = ""
    """A decoder adapter (low-rank updates of Whisper's decoder trained here, `python -m lab.train decoder`)
    merged into a second decoder that reads calls only (what the head hears as no call, and what it does not read
    as a call, is Whisper's own decoder's reading): its file, "none" for Whisper's own decoder
    alone, or "" (the default) for the committed one (`ADAPTER`) in the hall engine and none in the zero-shot
    whisper engine. The hall engine's default, which holds because the procedure keeps the balls a call's hearing
    left room for (`Heard.could_be`): the adapter hears calls in babble better, and its sharper N-best can leave a
    sound-alike sure that the rule of evidence must not trust (docs/hall-model.md, the adapter reading calls by
    default)."""
    adapter_strength: float = 1.0
    """How much of the adapter's updates is merged (0.5: half of each); full strength heard more than half on every
    validation cell."""
    call_longest: float = 3.0
    """Seconds: a hearing of one call from a longer utterance is never sure. A saying's utterance, its pause between
    letter and number and the cut's margins included, lasted at most 3.0 s in 99.9 % of the sure call hearings on
    the validation voices; the longer ones held two sayings cut as one ("G fifty" then "G fifty nine" at 10 dB,
    read "g fifty nine" sure by both readers, a repeat of G 50 that seemed missing)."""
    head: bool = False
    """Weigh each call with the call head trained here (`call_head`, docs/hall-model.md): the hall engine's way."""
    head_agree: float = 0.5
    """A call the call head hears as the same ball with at least this probability is sure. Chosen on the hall set
    of voices the head never trained on (`hallset.HEAD_VALIDATION`): the lowest of 0.3, 0.4, ... at which at most
    0.1 % of the call hearings were sure and wrong by agreement (0.3 and 0.4: 2 of 1,010, both at 5 dB)."""
    head_confirms: float = 0.5
    """... and from this probability (below `head_agree`) the head hearing the same ball makes a call sure when
    the decoder's own confidence is at least `decoder_confirms` and its free sentence bore the call out (likeness
    1): two readers agreeing, each short of sure alone. Off (equal to `head_agree`): measured at
    0.3, it was chosen on a validation dump (28 more sure and right call hearings of 977, none wrong), then made
    one call sure and wrong on the held-out voices (N 41 heard N 43 at 10 dB, its free sentence a loop, which is
    why the free sentence must bear the call out) and one on the validation voices' next run (G 58 heard G 59 at
    5 dB, the head at 0.45): a false accusation outweighs the 3-4 points it bought at 20 dB."""
    decoder_confirms: float = 0.6
    """The decoder's confidence (0.9 is sure) a call needs for `head_confirms` to make it sure."""
    head_doubt: float = 0.3
    """The call head giving another label (another ball, or no call) at least this probability makes a call
    unsure, whatever the decoder's confidence. On the validation voices 0.3 stopped one sure and wrong call (G 58
    heard G 59 at 5 dB, the head right at 0.34) and no right one; 0.5 stopped none."""
    head_pairs: bool = True
    """A call's second saying, heard as a ball by the decoder, agrees with a first saying the decoder read as
    another ball when the call head heard the second's ball in both, each from `head_agree`: the head's reading
    of the first stands against the decoder's (docs/bench-accuracy.md: on the validation voices 21 more of 1,373
    call hearings sure and right, none wrong). It holds together with a saying that opened no utterance being heard
    as unsure (a stirring): without that, it made a false A(3) at 5 dB, where the second saying of a call opened
    none."""
    decision: str = "rules"
    """How a call hearing is decided once the decoder and the call head have heard it: "rules" (the hand-set
    thresholds below) or "fitted" (`engines.decision`: one ball and one calibrated probability from both listeners'
    evidence and the other saying, fitted on human voices; sure from its one operating point). "fitted" needs the
    head and `engines/call_decision.json`."""
    decoder_alone: bool = False
    """With the call head, whether the decoder's own confidence can make a call sure that the head does not hear
    (below `head_agree`, and no other label from `head_doubt`). Off: the decoder adapter made such
    hearings common, and on the validation voices 1 in 10 of them was wrong (I 24 read "b four" at 0.90, the head at
    B 4 with 0.24; on Whisper's own decoder there were none or one a run); the head hearing the call, or a pair of
    sayings with the head hearing it in one, makes it sure."""
    head_writes: bool = True
    """Let the call head write a call where the decoder heard none (`head_alone`;
    docs/bench-accuracy.md)."""
    head_alone: float = 0.7
    """Where the decoder heard no call (nothing the grammar holds, or a phrase it is unsure of) and the step takes
    calls, a call the call head hears with at least this probability is the hearing, sure, unless more words
    could have made it another (`goes_on`: "N forty" may be N 41 with its "one" lost). Chosen on the validation
    voices' hall set with the hall cutting: the one wrong call the head wrote from 0.7 (N 41 heard
    as N 40 at 0.86, 5 dB) was such a call; without them, 0.7 wrote 22 more right calls than 0.8 and none
    wrong. A patter's highest call was 0.34."""
    head_overrules: float = 0.7
    """Where the decoder heard one call and the call head another ball with at least this probability, the head's
    call is the hearing, sure, on the same terms as `head_alone` (not a call more words could make another, not an
    utterance longer than `head_longest`). Above 1: off, the two readers disagreeing are a doubt."""
    rival: float = 0.1
    """A call whose N-best gives another ball at least this share has a rival: it is sure only when the call head
    hears it from `head_over_rival`, and a pair of its sayings does not confirm it (a confusion of the voice, not of
    the moment, repeats in both). Espeak's Caribbean "N thirty one", said twice in clean audio, was read "n forty
    one" with N 31 at 0.12 of the N-best, the head at N 41 with 0.63 and 0.59: N 41 on the board, sure and wrong,
    and a false B(8) when the floor read N 31. On the validation voices' dumps it
    would have made 8 of 592, 12 of 486 and 21 of 954 sure call hearings unsure, none of them wrong."""
    head_over_rival: float = 0.7
    """The call head's probability that makes a call with a rival sure (`rival`)."""
    head_longest: float = 4.0
    """Seconds: a longer utterance is never made sure by the head. Its training calls lasted at most 3.5 s; a
    longer utterance holds more than a call (a held-out voice's two sayings of G 51 and the first of G 46, cut as
    one 7.3 s utterance in 10 dB babble, were confirmed as G 51)."""
