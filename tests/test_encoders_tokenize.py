"""Training and evaluation tokenize through ONE implementation (encoders/tokenize.py): the ids and
attention masks the trainer feeds the model equal the ones evaluation (``Encoder``) feeds it, and
both equal tokenizing the whole templated string with the real BERT WordPiece tokenizer."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertModel

from hardneg.encoders import Encoder
from hardneg.encoders.templates import MASK_PLACEHOLDER, split_template
from hardneg.train.model import ContrastiveEncoder

TEMPLATES = [None, "sncse1", "sncse2", 'The sentence "{sentence}" is [MASK] !', "[MASK] : {sentence}"]
SENTENCES = [
    "A man is playing a guitar.",
    "",                                  # empty: template (and special tokens) only
    "   ",                               # whitespace only
    "Ünïcödé café — naïve façade!",
    'He said "no" twice.',
    "[MASK] is in the text",
    "word " * 150,                       # longer than either max_length: truncated
]


@pytest.fixture(scope="module")
def backbone(bert_tokenizer) -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=bert_tokenizer.vocab_size, hidden_size=8, num_hidden_layers=1,
                                num_attention_heads=1, intermediate_size=8, max_position_embeddings=128))


class _Recorder:
    """Stands in for the model inside ``Encoder._embed_batch``: keeps what it is fed."""

    def __init__(self, model: BertModel) -> None:
        self.model, self.seen = model, []

    def __call__(self, **kw):
        self.seen.append({k: kw[k] for k in ("input_ids", "attention_mask")})
        return self.model(**kw)


def _whole_string(tok, sentence: str, template: str | None, max_length: int) -> list[int]:
    """Reference: the templated string tokenized whole; when too long, the sentence span is cut
    (BERT: one [CLS] before, one [SEP] after)."""
    if template is None:
        return tok(sentence, truncation=True, max_length=max_length)["input_ids"]
    prefix, suffix = (p.replace(MASK_PLACEHOLDER, tok.mask_token) for p in split_template(template))
    row = tok(prefix + sentence + suffix)["input_ids"]
    if len(row) <= max_length:
        return row
    n_pre = len(tok(prefix, add_special_tokens=False)["input_ids"])
    n_suf = len(tok(suffix, add_special_tokens=False)["input_ids"])
    keep = max_length - 2 - n_pre - n_suf
    return row[: 1 + n_pre + keep] + row[len(row) - 1 - n_suf :]


@pytest.mark.parametrize("max_length", [20, 128])
@pytest.mark.parametrize("template", TEMPLATES)
def test_training_and_evaluation_feed_identical_ids_and_masks(bert_tokenizer, backbone, template, max_length):
    pooler = "avg" if template is None else "mask"
    train_side = ContrastiveEncoder(backbone, bert_tokenizer, pooler, max_length, mlp=False).tokenize(
        SENTENCES, template)
    rec = _Recorder(backbone)
    enc = Encoder(model=rec, tokenizer=bert_tokenizer, pooler=pooler, max_length=max_length, template=template)
    enc._embed_batch(enc._tokenize(SENTENCES))
    eval_side = rec.seen[0]
    for key in ("input_ids", "attention_mask"):
        assert torch.equal(train_side[key], eval_side[key]), key
    expect = [_whole_string(bert_tokenizer, s, template, max_length) for s in SENTENCES]
    ids, mask = train_side["input_ids"], train_side["attention_mask"]
    assert ids.shape == (len(SENTENCES), max(map(len, expect)))
    for i, row in enumerate(expect):
        n = len(row)
        assert ids[i, :n].tolist() == row and mask[i, :n].eq(1).all() and mask[i, n:].eq(0).all()
        assert ids[i, n:].eq(bert_tokenizer.pad_token_id).all()
        assert n <= max_length
        if template is not None:
            assert row.count(bert_tokenizer.mask_token_id) >= 1 and row[-1] == bert_tokenizer.sep_token_id
    assert len(expect[-1]) == max_length  # the long sentence was cut, the template kept


def test_max_length_too_short_for_the_template_names_the_setting(bert_tokenizer, backbone):
    with pytest.raises(ValueError, match=r"train setting 'max_length' \(10\) is too short for template 'sncse1'"):
        ContrastiveEncoder(backbone, bert_tokenizer, "mask", 10, mlp=False).tokenize(["a b"], "sncse1")
    enc = Encoder(model=backbone, tokenizer=bert_tokenizer, pooler="mask", max_length=10, template="sncse1")
    with pytest.raises(ValueError, match=r"max_length \(10\) is too short for template 'sncse1'"):
        enc._tokenize(["a b"])


@pytest.fixture(scope="module")
def bpe_tokenizer():
    """A small byte-level BPE tokenizer trained in code (RoBERTa-style specials): a word's leading
    space belongs to its token, so the training and evaluation conventions differ on it."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    corpus = ["This sentence : a man plays means <mask> .", "so a dog runs and a man said hello"] * 50
    bpe.train_from_iterator(corpus, vocab_size=400, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    from tokenizers.processors import TemplateProcessing

    bpe.post_processor = TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", unk_token="<unk>", mask_token="<mask>")


def test_evaluation_keeps_the_whole_string_convention_for_bpe(bpe_tokenizer):
    """PromptBERT/SNCSE evaluation.py tokenize the templated string whole; train.py joins parts."""
    from hardneg.encoders.tokenize import PromptTokenizer

    # no quotes around {sentence}: the sentence's first word follows a space, which byte-level BPE
    # folds into that word's token only when the string is tokenized whole
    template, sents = "This sentence : {sentence} means [MASK] .", ["a man plays", "a dog runs", "hello"]
    prefix, suffix = (p.replace(MASK_PLACEHOLDER, "<mask>") for p in split_template(template))
    whole = [bpe_tokenizer(prefix + s + suffix)["input_ids"] for s in sents]
    joined = PromptTokenizer(bpe_tokenizer, 64, joined=True).ids(sents, template)
    parts = PromptTokenizer(bpe_tokenizer, 64).ids(sents, template)
    assert joined == whole
    assert joined != parts  # the two conventions really differ on this tokenizer
    enc = Encoder(model=None, tokenizer=bpe_tokenizer, pooler="mask", max_length=64, template=template)
    assert enc._tokenize(sents) == whole
    cut = PromptTokenizer(bpe_tokenizer, 12, joined=True).ids(["a man plays " * 10], template)[0]
    assert len(cut) == 12 and cut[-1] == bpe_tokenizer.eos_token_id
    assert bpe_tokenizer.mask_token_id in cut
