"""SORT parametric memory: the training data of the book fine-tuning and of its control.

Paper (Pink et al. 2024, "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"),
Sec. 3.2 "Finetuning with a language modeling objective" and App. E "Fine-tuning details":
the books are split into chunks of 5000 words, each "contextualized in the same way in which
excerpts are presented in-context, i.e. together with the book-title in a user prompt along
with a preceding system prompt", and mixed with 3,500 instruction samples from OpenHermes-2.5
whose task types exclude "experience", "stylized_response", "joke", "trivia", "roleplay",
"riddle" and "greeting".  The union (116 chunks + 3,500 instructions) is trained for 5 epochs
at an effective batch of 192, i.e. ``ceil(3616 / 192) = 19`` steps per epoch, with a
checkpoint per epoch.  The control fine-tunes on the same 3,500 instruction samples alone.

This module prepares the texts (:func:`parametric_training_texts`; the workflow's
:func:`parametric_texts`); :func:`knowlab.core.train.train_segment` trains on them, an epoch per segment:

- the "books" run: ``fiction_texts`` = the framed chunks, ``webtext_texts`` = the rendered
  instructions, ``fiction_rate`` = the share of chunks in the union, ``fiction_warmup_steps=0``,
  ``max_steps = epochs * steps_per_epoch["books"]``, ``checkpoint_every = steps_per_epoch["books"]``;
- the "instructions" run: ``fiction_texts=[]``, the same instructions, ``fiction_rate=0``,
  ``max_steps = epochs * steps_per_epoch["instructions"]``.

The :class:`~knowlab.core.mixture.MixtureSampler` draws each sequence's source by a coin
of probability ``fiction_rate`` and fills every step completely, so an "epoch" of
``steps_per_epoch`` steps matches the paper's pass over the shuffled union in expectation, not
exactly (see :func:`parametric_training_texts`).

Instruction data (OpenHermes-2.5, or its offline stand-in ShareGPT) is loaded by
:mod:`knowlab.sort.instructions`; the two runs are fine-tuned by :mod:`knowlab.sort.finetune`.
"""

from __future__ import annotations

import logging
import math
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from knowlab.sort.books import Book
from knowlab.sort.instructions import PAPER_N_INSTRUCTIONS, load_instructions
from knowlab.sort.prompts import DEFAULT_TEMPLATES, PART_SEPARATOR, SYSTEM_PROMPT, get_template, validate_template
from knowlab.sort.settings import SortInstructionsSettings, SortParametricTextsSettings

log = logging.getLogger(__name__)

#: paper App. E: chunk length in words, epochs (the 3,500 instruction samples:
#: :data:`knowlab.sort.instructions.PAPER_N_INSTRUCTIONS`)
PAPER_CHUNK_WORDS = 5000
PAPER_EPOCHS = 5

_TAILS = ("merge", "drop")


# --------------------------------------------------------------------------- book chunks


def book_chunks(books: Iterable[Book], chunk_words: int = PAPER_CHUNK_WORDS, tail: str = "merge") -> list[dict]:
    """Split each book into consecutive, non-overlapping chunks of ``chunk_words`` words.

    Paper App. E: "The books ... are split into chunks of 5000 words".  The paper does not
    say what happens to a book's last, shorter piece.  Here it is its own chunk when it has at
    least ``chunk_words / 2`` words; a shorter tail is appended to the chunk before it
    (``tail="merge"``: every word is trained on, and a chunk has between ``ceil(chunk_words / 2)``
    and ``chunk_words + ceil(chunk_words / 2) - 1`` words) or left out
    (``tail="drop"``: all chunks but a half-or-longer tail have exactly ``chunk_words`` words,
    and the book's last words are never trained on).  A book shorter than half a chunk is one
    chunk with ``merge`` and no chunk with ``drop``; an empty book gives no chunk.

    Args:
        books: the books, in the order the chunks are returned.
        chunk_words: words per chunk (paper: 5000).
        tail: ``"merge"`` or ``"drop"``, as above.

    Returns:
        One dict per chunk, books in the order given and chunks in text order:
        ``book_id``, ``title``, ``chunk_index`` (0-based within the book), ``first_word``
        (offset of the chunk's first word in ``book.words``), ``n_words`` and ``text``
        (the words joined by single spaces).

    Raises:
        ValueError: ``chunk_words < 1`` or an unknown ``tail``.
    """
    if chunk_words < 1:
        raise ValueError(f"chunk_words must be >= 1, got {chunk_words}")
    if tail not in _TAILS:
        raise ValueError(f"tail must be one of {_TAILS}, got {tail!r}")
    out: list[dict] = []
    for book in books:
        words = book.words
        starts = list(range(0, len(words), chunk_words))
        if starts and len(words) - starts[-1] < (chunk_words + 1) // 2:  # a tail shorter than half a chunk
            if tail == "drop":
                starts.pop()
            elif len(starts) > 1:
                starts.pop()  # its words go to the chunk before
        for index, start in enumerate(starts):
            stop = starts[index + 1] if index + 1 < len(starts) else len(words)
            if tail == "drop" and index + 1 == len(starts):
                stop = min(stop, start + chunk_words)
            piece = words[start:stop]
            out.append(
                {
                    "book_id": book.book_id,
                    "title": book.title,
                    "chunk_index": index,
                    "first_word": start,
                    "n_words": len(piece),
                    "text": " ".join(piece),
                }
            )
    return out


# --------------------------------------------------------------------------- chat rendering


def _apply_chat(tokenizer, messages: list[dict[str, str]]) -> str:
    """``apply_chat_template`` without a generation prompt; a template that refuses a system
    message gets it as the first paragraph of the first user message (as in render_prompt)."""
    # deferred: jinja2 comes with transformers, in the envs whose tokenizers apply chat templates
    from jinja2.exceptions import TemplateError

    try:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=False, tokenize=False)
    except TemplateError:
        if not messages or messages[0]["role"] != "system" or len(messages) < 2 or messages[1]["role"] != "user":
            raise
        merged = {"role": "user", "content": messages[0]["content"] + PART_SEPARATOR + messages[1]["content"]}
        return tokenizer.apply_chat_template([merged, *messages[2:]], add_generation_prompt=False, tokenize=False)


def _reading_instruction(template: Mapping[str, Any] | str) -> str:
    if isinstance(template, str):
        reading = template
    elif "reading" in template:
        reading = template["reading"]
    else:
        raise ValueError(f"prompt template {template.get('id', '<no id>')!r} has no reading instruction")
    if not isinstance(reading, str):
        raise TypeError(f"the reading instruction must be a string, got {type(reading).__name__}")
    try:
        used = {name for _, name, _, _ in string.Formatter().parse(reading) if name is not None}
    except ValueError as err:
        raise ValueError(f"the reading instruction is not a valid format string ({err})") from err
    if "excerpt" not in used or used - {"title", "excerpt"}:
        raise ValueError(
            f"the reading instruction must use {{excerpt}} and at most {{title}} besides, got {sorted(used)}"
        )
    return reading


def frame_chunk(
    tokenizer,
    chunk: Mapping[str, Any] | str,
    title: str,
    template: Mapping[str, Any] | str,
    system_prompt: str | None = SYSTEM_PROMPT,
) -> str:
    """One book chunk framed like the in-context excerpt of a SORT prompt: the training text.

    Paper App. E: the chunks are "contextualized in the same way in which excerpts are
    presented in-context ..., i.e. together with the book-title in a user prompt along with a
    preceding system prompt".  The user message is the template's reading instruction with
    ``{title}`` = ``title`` and ``{excerpt}`` = the chunk text (stripped), exactly the first
    part of the in-context user message of :func:`knowlab.sort.prompts.user_message`, without
    the task and question.

    With a chat template (``tokenizer.chat_template`` set): ``[system, user]`` through
    ``tokenizer.apply_chat_template(..., add_generation_prompt=False, tokenize=False)``; a
    template that refuses the system role gets the system prompt as the first paragraph of
    the user message (as :func:`knowlab.sort.prompts.render_prompt` does).  Without one:
    ``system prompt``, a blank line, the user message.  ``system_prompt=None`` or ``""``
    leaves it out (a chat template may then insert its own default).

    Args:
        tokenizer: a Hugging Face tokenizer (only its chat template is used).
        chunk: a chunk dict of :func:`book_chunks` (its ``text``) or the chunk text itself.
        title: the book title shown in the prompt.
        template: a prompt template (its ``reading`` is used) or a reading instruction string.
        system_prompt: the system prompt (paper App. B.2's generic one by default).

    Returns:
        The training text (a string; the trainer adds BOS/EOS and cuts it to ``seq_len`` tokens).

    Raises:
        ValueError: an empty chunk, or a reading instruction without ``{excerpt}`` or with
            placeholders other than ``{title}``/``{excerpt}``.
        TypeError: a reading instruction that is not a string.
        jinja2.exceptions.TemplateError: the chat template refuses the messages even merged.
    """
    text = (chunk if isinstance(chunk, str) else str(chunk["text"])).strip()
    if not text:
        raise ValueError(f"empty book chunk for {title!r}")
    user = _reading_instruction(template).format(title=title, excerpt=text)
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": user}]
        if system_prompt:
            messages.insert(0, {"role": "system", "content": system_prompt})
        return _apply_chat(tokenizer, messages)
    return (system_prompt + PART_SEPARATOR if system_prompt else "") + user


def render_conversation(tokenizer, conversation: Sequence[Mapping[str, str]]) -> str:
    """One instruction conversation as a training text.

    With a chat template: ``tokenizer.apply_chat_template(conversation,
    add_generation_prompt=False, tokenize=False)`` (a template that refuses a leading system
    message gets it merged into the first user message).  Without one: one line per turn,
    ``"System: ..."`` / ``"User: ..."`` / ``"Assistant: ..."``, joined by newlines.

    Args:
        conversation: turns ``{"role": "system" | "user" | "assistant", "content": str}``
            as returned by :func:`knowlab.sort.instructions.load_sharegpt` /
            :func:`knowlab.sort.instructions.load_openhermes`.

    Returns:
        The rendered text.

    Raises:
        ValueError: an empty conversation or a turn with another role.
        jinja2.exceptions.TemplateError: the chat template refuses the conversation.
    """
    if not conversation:
        raise ValueError("empty conversation")
    messages = []
    for turn in conversation:
        if turn.get("role") not in ("system", "user", "assistant"):
            raise ValueError(f"unknown role {turn.get('role')!r} in conversation (expected system/user/assistant)")
        messages.append({"role": turn["role"], "content": str(turn["content"])})
    if getattr(tokenizer, "chat_template", None):
        return _apply_chat(tokenizer, messages)
    return "\n".join(f"{m['role'].capitalize()}: {m['content']}" for m in messages)


# --------------------------------------------------------------------------- the two runs


def steps_per_epoch(n_samples: int, sequences_per_step: int) -> int:
    """Optimizer steps for one pass over ``n_samples``: ``ceil(n_samples / sequences_per_step)``.

    Paper App. E: 116 chunks + 3,500 instructions at a batch of 192 give 19 steps per epoch.

    Raises:
        ValueError: ``n_samples < 1`` or ``sequences_per_step < 1``.
    """
    if n_samples < 1 or sequences_per_step < 1:
        raise ValueError(f"need n_samples >= 1 and sequences_per_step >= 1, got {n_samples}, {sequences_per_step}")
    return math.ceil(n_samples / sequences_per_step)


def _resolve_template(template: Mapping[str, Any] | str) -> Mapping[str, Any]:
    """A template dict (validated), or the template of :data:`~knowlab.sort.prompts.DEFAULT_TEMPLATES`
    with id ``template``."""
    if isinstance(template, Mapping):
        return validate_template(template)
    return get_template(DEFAULT_TEMPLATES, str(template))


def _token_lengths(tokenizer, texts: list[str]) -> list[int]:
    """Token counts as the trainer sees them: the text plus its BOS/EOS (tokenize_sequences)."""
    if not texts:
        return []
    return [len(ids) + 2 for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def parametric_training_texts(
    tokenizer,
    books: Sequence[Book],
    seed: int,
    *,
    global_batch_size: int,
    chunk_words: int = PAPER_CHUNK_WORDS,
    tail: str = "merge",
    template: Mapping[str, Any] | str = DEFAULT_TEMPLATES[0]["id"],
    system_prompt: str | None = SYSTEM_PROMPT,
    seq_len: int | None = None,
    instruction_source: SortInstructionsSettings | None = None,
    instructions: Sequence[Sequence[Mapping[str, str]]] | None = None,
) -> dict[str, Any]:
    """The training texts of the SORT parametric-memory runs "books" and "instructions" (paper App. E).

    Args:
        tokenizer: the base model's tokenizer (its chat template frames chunks and conversations).
        books: the SORT books, chunked by :func:`book_chunks` (each chunk titled ``book.title``).
        seed: the instruction-sampling seed.
        global_batch_size: sequences per optimizer step, all ranks together.
        chunk_words: words per chunk (paper: 5000).
        tail: ``"merge"`` or ``"drop"`` (:func:`book_chunks`).
        template: a template dict, or the id of one of :data:`~knowlab.sort.prompts.DEFAULT_TEMPLATES`
            (default the first), whose reading instruction frames the chunks.
        system_prompt: the system prompt of the framed chunks (default the paper's; ``None``: none).
        seq_len: the training length in tokens, to count the texts that the trainer will cut
            (``None``: not counted).
        instruction_source: the instruction conversations to load
            (:func:`knowlab.sort.instructions.load_instructions`; default 3,500 packaged ShareGPT
            conversations).
        instructions: already loaded conversations; when given, ``instruction_source`` is not read.

    Returns:
        A dict with

        - ``books``: the framed chunk texts (books in the order given, chunks in text order);
        - ``instructions``: the rendered instruction texts (sampled order);
        - ``chunks``: per chunk ``book_id, title, chunk_index, first_word, n_words`` (no text);
        - ``fiction_rate``: ``n_chunks / (n_chunks + n_instructions)``, the share of chunks in
          the paper's union, to pass as the trainer's ``fiction_rate`` of the "books" run;
        - ``sequences_per_step``: ``global_batch_size``;
        - ``steps_per_epoch``: ``{"books": ceil((n_chunks + n_instructions) / sequences_per_step),
          "instructions": ceil(n_instructions / sequences_per_step)}``;
        - ``max_tokens`` / ``over_seq_len``: per pool, the longest text in tokens (with BOS/EOS)
          and how many texts exceed ``seq_len`` (``None`` without ``seq_len``).

        Use with :func:`knowlab.core.train.train_segment`: "books" gets ``fiction_texts=books``,
        ``webtext_texts=instructions``, ``fiction_rate``, ``fiction_warmup_steps=0`` (else the
        first steps hold no chunk), ``max_steps=epochs * steps_per_epoch["books"]`` and
        ``checkpoint_every=steps_per_epoch["books"]`` (a checkpoint per epoch); "instructions"
        gets ``fiction_texts=[]``, the same instructions, ``fiction_rate=0`` and its own step
        counts.  The MixtureSampler picks each sequence's source by a coin of probability
        ``fiction_rate`` and fills every step, so an "epoch" of ``steps_per_epoch`` steps holds
        ``steps_per_epoch * sequences_per_step >= n`` sequences and a binomial number of
        chunks, not exactly one pass over the union; the per-step log's ``*_epochs``
        counters give the true exposure at each checkpoint.

    Raises:
        ValueError: no book chunk or no instruction; as :func:`book_chunks`,
            :func:`frame_chunk`, :func:`knowlab.sort.instructions.load_instructions`.
    """
    sequences = int(global_batch_size)
    template = _resolve_template(template)
    chunks = book_chunks(books, int(chunk_words), tail)
    if not chunks:
        raise ValueError("no book chunks: the books are empty (or shorter than half a chunk with tail='drop')")
    if instructions is None:
        source = instruction_source or SortInstructionsSettings(n=PAPER_N_INSTRUCTIONS)
        instructions = load_instructions(source, seed)
    if not instructions:
        raise ValueError("no instruction samples: the control run needs at least one")
    book_texts = [frame_chunk(tokenizer, c, c["title"], template, system_prompt) for c in chunks]
    instruction_texts = [render_conversation(tokenizer, conv) for conv in instructions]
    n_chunks, n_instr = len(book_texts), len(instruction_texts)
    out: dict[str, Any] = {
        "books": book_texts,
        "instructions": instruction_texts,
        "chunks": [{k: v for k, v in c.items() if k != "text"} for c in chunks],
        "fiction_rate": n_chunks / (n_chunks + n_instr),
        "sequences_per_step": sequences,
        "steps_per_epoch": {
            "books": steps_per_epoch(n_chunks + n_instr, sequences),
            "instructions": steps_per_epoch(n_instr, sequences),
        },
        "max_tokens": None,
        "over_seq_len": None,
    }
    if seq_len:
        seq_len = int(seq_len)
        lengths = {
            "books": _token_lengths(tokenizer, book_texts),
            "instructions": _token_lengths(tokenizer, instruction_texts),
        }
        out["max_tokens"] = {k: max(v) for k, v in lengths.items()}
        out["over_seq_len"] = {k: sum(n > seq_len for n in v) for k, v in lengths.items()}
        if out["over_seq_len"]["books"]:
            log.warning(
                "%d of %d framed book chunks are longer than seq_len=%d tokens (longest %d): the trainer cuts "
                "them and never trains on their ends; raise seq_len or lower chunk_words",
                out["over_seq_len"]["books"], n_chunks, seq_len, out["max_tokens"]["books"],
            )  # fmt: skip
    log.info(
        "parametric memory data: %d chunks of %s words from %d books, %d instructions, fiction_rate %.4f, "
        "%d sequences per step, steps per epoch %s",
        n_chunks, chunk_words, len(books), n_instr, out["fiction_rate"], sequences,
        out["steps_per_epoch"],
    )  # fmt: skip
    return out


def parametric_texts(
    tokenizer,
    books: Sequence[Book],
    items: Sequence[Mapping[str, Any]],
    template,
    settings: SortParametricTextsSettings,
    seed: int,
) -> dict[str, Any]:
    """Training texts of the parametric-memory runs ``books`` and ``instructions`` (paper Sec. 3.2, App. E).

    ``sort.parametric.scope``: ``books`` chunks the whole books into ``chunk_words``-word
    chunks (paper: 5000); ``excerpts`` (the CPU default) trains on the test items' excerpts
    only, one chunk each, so that the memory the test needs is inserted in a few steps.
    Either way a chunk is framed like the in-context prompt (``sort.system_prompt`` and the reading
    instruction of ``template`` with the title) and mixed with the instruction conversations of
    ``settings.instructions``, in steps of ``sort.parametric.finetune.global_batch_size`` sequences
    (:func:`parametric_training_texts`).

    Raises:
        ValueError: ``sort.parametric.finetune.global_batch_size`` is not set; as
            :func:`parametric_training_texts`.
    """
    if settings.global_batch_size is None:
        raise ValueError(
            "sort.parametric.finetune.global_batch_size is not set: "
            "the parametric-memory texts are counted in its steps"
        )
    if settings.scope == "excerpts":
        titles = {b.book_id: b.title for b in books}
        seen, books = set(), []
        for item in items:
            key = (item["book_id"], item["excerpt_start"], item["excerpt_length"])
            if item["split"] == "test" and key not in seen:
                seen.add(key)
                books.append(Book(f"{key[0]}@{key[1]}", titles[key[0]], item["excerpt"].split()))
        chunk_words = max(len(b.words) for b in books)
    else:
        chunk_words = settings.chunk_words
    texts = parametric_training_texts(
        tokenizer,
        books,
        seed,
        global_batch_size=settings.global_batch_size,
        chunk_words=chunk_words,
        template=template,
        system_prompt=settings.system_prompt,
        seq_len=settings.seq_len,
        instruction_source=settings.instructions,
    )
    log.info(
        "%d chunks and %d instruction texts; %s steps per epoch; longest %s tokens, over seq_len %s",
        len(texts["books"]), len(texts["instructions"]), texts["steps_per_epoch"], texts["max_tokens"],
        texts["over_seq_len"],
    )  # fmt: skip
    return texts
