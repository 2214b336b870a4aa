"""The context/answer token boundary with the real SmolLM2 tokenizer (packaged GGUF)."""

import pytest

from knowlab.core.scoring import encode_pair
from knowlab.fictionalqa.suites import MCQ_TEMPLATE, QA_TEMPLATE


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
