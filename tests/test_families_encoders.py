"""skipsearch.scan on tiny checkpoints of the encoder and encoder-decoder families.

Every checkpoint carries the family's real tensor names (with unrelated
attention, norm and embedding tensors beside the FFN ones) and a config.json
copied from a public checkpoint's, shrunk to d=4. One block per stack is
planted absorbable (docs/theory.md §2.2: W_down[:, S] W_up[S, :] = -I_d with c=1 for ReLU,
GELU, its tanh form and SiLU) and the others are generic, so each verdict is
known in advance.

Sources, family by family (transformers = repository huggingface/transformers):

- distilbert: transformers src/transformers/models/distilbert/modeling_distilbert.py
  (FFN.lin1/lin2, TransformerBlock: output_layer_norm(ffn_output + sa_output),
  base_model_prefix "distilbert") and configuration_distilbert.py (activation
  "gelu", dim, hidden_dim, n_layers); config.json of distilbert-base-uncased as
  vendored in voxelwerke/party models/distilbert-base-uncased/config.json.
- deberta-v2: transformers src/transformers/models/deberta_v2/modeling_deberta_v2.py
  (DebertaV2Intermediate.dense, DebertaV2Output.dense + LayerNorm(h + input),
  ConvLayer after layer 0) and configuration_deberta_v2.py (hidden_act "gelu");
  config of microsoft/deberta-v3-xsmall as dumped in a public script
  (find_string id 81940267).
- albert: transformers src/transformers/models/albert/modeling_albert.py
  (AlbertTransformer.albert_layer_groups, AlbertLayerGroup.albert_layers,
  AlbertLayer.ffn/ffn_output, full_layer_layer_norm(ffn_output + attention_output))
  and configuration_albert.py (hidden_act "gelu_new", num_hidden_groups 1,
  inner_group_num 1); config.json of an albert-base-v2 fine-tune in
  NiyonshutiDavid/uruti_MLOP models/distilbert-base-uncased/config.json
  (model_type "albert" despite the folder name).
- bart: transformers src/transformers/models/bart/modeling_bart.py (BartEncoderLayer
  and BartDecoderLayer: fc1/fc2, final_layer_norm after the residual sum) and
  configuration_bart.py (activation_function "gelu"); config.json of
  facebook/bart-large-cnn in CapstoneGroup1StClair/Capstone-2 bart-large-cnn/config.json.
- mbart: transformers src/transformers/models/mbart/modeling_mbart.py (MBartEncoderLayer,
  MBartDecoderLayer: final_layer_norm before fc1) and configuration_mbart.py;
  config keys of facebook/mbart-large-cc25 (normalize_before true) as copied in a
  public script (find_string '"model_type": "mbart",').
- marian: transformers src/transformers/models/marian/modeling_marian.py (copied from
  BartEncoderLayer/BartDecoderLayer: post-LN) and configuration_marian.py; config.json
  of Helsinki-NLP/opus-mt-en-de (activation_function "swish") as quoted in a public
  README (find_string '"architectures": ["MarianMTModel"]').
- pegasus: transformers src/transformers/models/pegasus/modeling_pegasus.py (copied from
  MBartEncoderLayer/MBartDecoderLayer: pre-LN) and configuration_pegasus.py; config of
  google/pegasus-large (activation_function "relu", normalize_before true) as copied
  in a public script (find_string id 26121681073).
- whisper: transformers src/transformers/models/whisper/modeling_whisper.py
  (WhisperEncoderLayer, WhisperDecoderLayer: final_layer_norm before fc1) and
  configuration_whisper.py (activation_function "gelu"); config keys of
  openai/whisper-tiny as pinned in public tests (find_string '"encoder_ffn_dim": 1536,').
"""

from __future__ import annotations

import numpy as np
import pytest
from skipsearch.io._families.encoders import POST_LN, PRE_LN
from skipsearch.io.checkpoints import CheckpointError
from skipsearch.io.layouts import FAMILIES
from skipsearch.scan import describe_checkpoint

from tests.family_builders import biased_pair
from tests.test_families import generic, planted, save, scan

D = 4


def check(reports, expected):
    """``expected``: one (block, stack, layer, m, verdict) per report, in order."""
    got = [(r.block, r.stack, r.layer, r.m, r.verdict) for r in reports]
    assert got == expected, [r.result for r in reports]
    for r in reports:
        assert (r.kind, r.d, r.expert) == ("mlp", D, None)
        if r.verdict == "absorbable":
            assert r.result.subset.tolist() == list(range(D))
        elif r.verdict == "not_absorbable":
            assert r.relaxation_distance is not None and r.relaxation_distance > 0.01


# -- DistilBERT ------------------------------------------------------------------------------


def distilbert(rng, m=9, layers=None, **config):
    layers = layers or [planted(rng, D, m), generic(rng, D, m)]
    t = {
        "distilbert.embeddings.word_embeddings.weight": rng.standard_normal((11, D)),
        "distilbert.embeddings.position_embeddings.weight": rng.standard_normal((8, D)),
        "distilbert.embeddings.LayerNorm.weight": np.ones(D),
        "vocab_projector.bias": np.zeros(11),
    }
    for i, (up, down) in enumerate(layers):
        base = f"distilbert.transformer.layer.{i}."
        t[base + "attention.q_lin.weight"] = rng.standard_normal((D, D))
        t[base + "attention.out_lin.weight"] = rng.standard_normal((D, D))
        t[base + "sa_layer_norm.weight"] = np.ones(D)
        biased_pair(rng, t, base + "ffn.lin1", base + "ffn.lin2", up, down)
        t[base + "output_layer_norm.weight"] = np.ones(D)
    cfg = {
        "activation": "gelu",
        "architectures": ["DistilBertForMaskedLM"],
        "attention_dropout": 0.1,
        "dim": D,
        "dropout": 0.1,
        "hidden_dim": m,
        "initializer_range": 0.02,
        "max_position_embeddings": 8,
        "model_type": "distilbert",
        "n_heads": 2,
        "n_layers": len(layers),
        "pad_token_id": 0,
        "qa_dropout": 0.1,
        "seq_classif_dropout": 0.2,
        "sinusoidal_pos_embds": False,
        "tie_weights_": True,
        "vocab_size": 11,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not None}


def test_distilbert_defaults_and_errors(tmp_path):
    rng = np.random.default_rng(1)
    # DistilBertConfig: activation="gelu" when the key is absent.
    info = describe_checkpoint(save(tmp_path / "a", *distilbert(rng, activation=None)))
    assert (info.hidden_act, info.activation, info.d, info.m) == ("gelu", "gelu", D, 9)
    info = describe_checkpoint(save(tmp_path / "r", *distilbert(rng, activation="relu")))
    assert info.activation == "relu"
    # hidden_dim is checked against every block's shapes.
    with pytest.raises(
        CheckpointError, match=r"ffn.lin1.weight has shape \(9, 4\), expected \(7, 4\)"
    ):
        describe_checkpoint(save(tmp_path / "m", *distilbert(rng, hidden_dim=7)))
    # n_layers is checked against the layers found.
    with pytest.raises(CheckpointError, match="n_layers=3"):
        describe_checkpoint(save(tmp_path / "n", *distilbert(rng, n_layers=3)))


# -- DeBERTa-v2 --------------------------------------------------------------------------------


def deberta(rng, m=10, **config):
    t = {
        "deberta.embeddings.word_embeddings.weight": rng.standard_normal((11, D)),
        "deberta.embeddings.LayerNorm.weight": np.ones(D),
        "deberta.encoder.rel_embeddings.weight": rng.standard_normal((8, D)),
        "deberta.encoder.LayerNorm.weight": np.ones(D),
    }
    for i, (up, down) in enumerate([generic(rng, D, m), planted(rng, D, m)]):
        base = f"deberta.encoder.layer.{i}."
        t[base + "attention.self.query_proj.weight"] = rng.standard_normal((D, D))
        t[base + "attention.self.key_proj.weight"] = rng.standard_normal((D, D))
        t[base + "attention.output.dense.weight"] = rng.standard_normal((D, D))
        t[base + "attention.output.LayerNorm.weight"] = np.ones(D)
        biased_pair(rng, t, base + "intermediate.dense", base + "output.dense", up, down)
        t[base + "output.LayerNorm.weight"] = np.ones(D)
    cfg = {
        "model_type": "deberta-v2",
        "position_buckets": 4,
        "norm_rel_ebd": "layer_norm",
        "share_att_key": True,
        "hidden_size": D,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": m,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 8,
        "type_vocab_size": 0,
        "initializer_range": 0.02,
        "relative_attention": True,
        "max_relative_positions": -1,
        "position_biased_input": False,
        "pos_att_type": ["p2c", "c2p"],
        "vocab_size": 11,
        "layer_norm_eps": 1e-07,
        "pooler_hidden_size": D,
        "pooler_dropout": 0,
        "pooler_hidden_act": "gelu",
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not None}


def test_deberta_v2_defaults_and_conv_note(tmp_path):
    rng = np.random.default_rng(3)
    # DebertaV2Config: hidden_act="gelu" when absent.
    info = describe_checkpoint(save(tmp_path / "a", *deberta(rng, hidden_act=None)))
    assert info.activation == "gelu"
    # deberta-v2-xlarge's conv_kernel_size=3, conv_act="gelu": a ConvLayer after layer 0.
    info = describe_checkpoint(
        save(tmp_path / "c", *deberta(rng, conv_kernel_size=3, conv_act="gelu"))
    )
    (part,) = info.parts
    assert "conv_kernel_size=3" in part.note and "gelu(conv x)" in part.note
    # ConvLayer's conv_act defaults to "tanh".
    info = describe_checkpoint(save(tmp_path / "t", *deberta(rng, conv_kernel_size=3)))
    assert "tanh(conv x)" in info.parts[0].note
    with pytest.raises(CheckpointError, match="expected \\(12, 4\\)"):
        describe_checkpoint(save(tmp_path / "m", *deberta(rng, intermediate_size=12)))


@pytest.mark.parametrize(
    "builder,seed,family,expected",
    [
        (
            distilbert,
            0,
            "distilbert",
            [
                ("distilbert.transformer.layer.0.ffn", None, 0, 9, "absorbable"),
                ("distilbert.transformer.layer.1.ffn", None, 1, 9, "not_absorbable"),
            ],
        ),
        (
            deberta,
            2,
            "deberta-v2",
            [
                ("deberta.encoder.layer.0", None, 0, 10, "not_absorbable"),
                ("deberta.encoder.layer.1", None, 1, 10, "absorbable"),
            ],
        ),
    ],
    ids=["distilbert", "deberta_v2"],
)
def test_post_ln_encoder(tmp_path, builder, seed, family, expected):
    reports = scan(save(tmp_path / "d", *builder(np.random.default_rng(seed))))
    check(reports, expected)
    for r in reports:
        assert (r.family, r.activation, r.norm, r.form, r.note) == (
            family,
            "gelu",
            "post",
            POST_LN,
            None,
        )


# -- ALBERT ------------------------------------------------------------------------------------


def albert(rng, m=8, block=None, groups=1, inner=1, **config):
    e = 3  # embedding_size
    t = {
        "albert.embeddings.word_embeddings.weight": rng.standard_normal((11, e)),
        "albert.embeddings.LayerNorm.weight": np.ones(e),
        "albert.encoder.embedding_hidden_mapping_in.weight": rng.standard_normal((D, e)),
        "albert.pooler.weight": rng.standard_normal((D, D)),
    }
    for g in range(groups):
        for j in range(inner):
            up, down = block or planted(rng, D, m)
            base = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{j}."
            t[base + "attention.query.weight"] = rng.standard_normal((D, D))
            t[base + "attention.dense.weight"] = rng.standard_normal((D, D))
            t[base + "attention.LayerNorm.weight"] = np.ones(D)
            biased_pair(rng, t, base + "ffn", base + "ffn_output", up, down)
            t[base + "full_layer_layer_norm.weight"] = np.ones(D)
    cfg = {
        "architectures": ["AlbertForSequenceClassification"],
        "attention_probs_dropout_prob": 0,
        "bos_token_id": 2,
        "classifier_dropout_prob": 0.1,
        "down_scale_factor": 1,
        "embedding_size": e,
        "eos_token_id": 3,
        "gap_size": 0,
        "hidden_act": "gelu_new",
        "hidden_dropout_prob": 0,
        "hidden_size": D,
        "initializer_range": 0.02,
        "inner_group_num": inner,
        "intermediate_size": m,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 8,
        "model_type": "albert",
        "net_structure_type": 0,
        "num_attention_heads": 2,
        "num_hidden_groups": groups,
        "num_hidden_layers": 12,
        "num_memory_blocks": 0,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "type_vocab_size": 2,
        "vocab_size": 11,
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not None}


def test_albert_one_shared_block(tmp_path):
    rng = np.random.default_rng(4)
    reports = scan(save(tmp_path / "a", *albert(rng)))
    check(
        reports,
        [("albert.encoder.albert_layer_groups.0.albert_layers.0", None, 0, 8, "absorbable")],
    )
    (r,) = reports
    assert (r.family, r.activation, r.norm, r.form) == ("albert", "gelu_tanh", "post", POST_LN)
    assert "12 times" in r.note
    reports = scan(save(tmp_path / "g", *albert(rng, block=generic(rng, D, 8))))
    check(
        reports,
        [("albert.encoder.albert_layer_groups.0.albert_layers.0", None, 0, 8, "not_absorbable")],
    )


def test_albert_defaults_and_groups(tmp_path):
    rng = np.random.default_rng(5)
    # AlbertConfig: hidden_act="gelu_new" when absent (albert-base-v1 says "gelu").
    info = describe_checkpoint(save(tmp_path / "a", *albert(rng, hidden_act=None)))
    assert (info.hidden_act, info.activation) == ("gelu_new", "gelu_tanh")
    assert info.parts[0].note.endswith("applies it 12 times")
    # Two groups of two inner layers: four blocks, and a note on how each is applied.
    info = describe_checkpoint(save(tmp_path / "g", *albert(rng, groups=2, inner=2)))
    assert info.blocks == tuple(
        f"albert.encoder.albert_layer_groups.{g}.albert_layers.{j}" for g in (0, 1) for j in (0, 1)
    )
    assert "num_hidden_groups=2, inner_group_num=2" in info.parts[0].note
    assert "each group 6 times" in info.parts[0].note
    with pytest.raises(CheckpointError, match="expected \\(9, 4\\)"):
        describe_checkpoint(save(tmp_path / "m", *albert(rng, intermediate_size=9)))


# -- BART-like encoder-decoders ----------------------------------------------------------------

#: model_type -> (norm, activation registry name, the real config's own keys)
SEQ2SEQ = {
    # facebook/bart-large-cnn
    "bart": (
        "post",
        "gelu",
        {
            "activation_function": "gelu",
            "add_final_layer_norm": False,
            "architectures": ["BartForConditionalGeneration"],
            "normalize_before": False,
            "scale_embedding": False,
            "num_hidden_layers": 2,
        },
    ),
    # facebook/mbart-large-cc25
    "mbart": (
        "pre",
        "gelu",
        {
            "activation_function": "gelu",
            "add_final_layer_norm": True,
            "architectures": ["MBartForConditionalGeneration"],
            "normalize_before": True,
            "scale_embedding": True,
        },
    ),
    # Helsinki-NLP/opus-mt-en-de
    "marian": (
        "post",
        "silu",
        {
            "activation_function": "swish",
            "architectures": ["MarianMTModel"],
            "share_encoder_decoder_embeddings": True,
            "scale_embedding": True,
        },
    ),
    # google/pegasus-large
    "pegasus": (
        "pre",
        "relu",
        {
            "activation_function": "relu",
            "add_final_layer_norm": True,
            "architectures": ["PegasusForConditionalGeneration"],
            "normalize_before": True,
            "static_position_embeddings": True,
            "scale_embedding": True,
        },
    ),
    # openai/whisper-tiny
    "whisper": (
        "pre",
        "gelu",
        {
            "activation_function": "gelu",
            "architectures": ["WhisperForConditionalGeneration"],
            "num_mel_bins": 80,
            "max_source_positions": 8,
            "max_target_positions": 8,
        },
    ),
}


def seq2seq(rng, model_type, m_enc=9, m_dec=11, stacks=("encoder", "decoder"), **config):
    """Encoder layer 0 and decoder layer 1 planted, the other two generic."""
    t = {"model.shared.weight": rng.standard_normal((11, D))}
    if model_type == "whisper":
        t = {
            "model.encoder.conv1.weight": rng.standard_normal((D, 3, 3)),
            "model.encoder.layer_norm.weight": np.ones(D),
            "model.decoder.embed_tokens.weight": rng.standard_normal((11, D)),
        }
    m = {"encoder": m_enc, "decoder": m_dec}
    for stack in stacks:
        t[f"model.{stack}.embed_positions.weight"] = rng.standard_normal((8, D))
        for i in range(2):
            make = planted if (stack == "encoder") == (i == 0) else generic
            up, down = make(rng, D, m[stack])
            base = f"model.{stack}.layers.{i}."
            t[base + "self_attn.k_proj.weight"] = rng.standard_normal((D, D))
            t[base + "self_attn.out_proj.weight"] = rng.standard_normal((D, D))
            t[base + "self_attn_layer_norm.weight"] = np.ones(D)
            if stack == "decoder":
                t[base + "encoder_attn.q_proj.weight"] = rng.standard_normal((D, D))
                t[base + "encoder_attn_layer_norm.weight"] = np.ones(D)
            biased_pair(rng, t, base + "fc1", base + "fc2", up, down)
            t[base + "final_layer_norm.weight"] = np.ones(D)
    cfg = {
        "model_type": model_type,
        "d_model": D,
        "encoder_attention_heads": 2,
        "encoder_ffn_dim": m_enc,
        "encoder_layers": 2,
        "decoder_attention_heads": 2,
        "decoder_ffn_dim": m_dec,
        "decoder_layers": 2,
        "is_encoder_decoder": True,
        "vocab_size": 11,
        "max_position_embeddings": 8,
        **SEQ2SEQ[model_type][2],
    }
    cfg.update(config)
    return t, {k: v for k, v in cfg.items() if v is not None}


@pytest.mark.parametrize("model_type", sorted(SEQ2SEQ))
def test_seq2seq_encoder_then_decoder(tmp_path, model_type):
    norm, activation, _ = SEQ2SEQ[model_type]
    reports = scan(save(tmp_path / model_type, *seq2seq(np.random.default_rng(6), model_type)))
    # For SiLU (Marian's swish) the flip condition is only known to be
    # sufficient: a block with no flip set is undecided, not "not absorbable".
    other = "undecided" if activation == "silu" else "not_absorbable"
    check(
        reports,
        [
            ("model.encoder.layers.0", "encoder", 0, 9, "absorbable"),
            ("model.encoder.layers.1", "encoder", 1, 9, other),
            ("model.decoder.layers.0", "decoder", 0, 11, other),
            ("model.decoder.layers.1", "decoder", 1, 11, "absorbable"),
        ],
    )
    if other == "undecided":
        assert all("only known to be sufficient" in r.reason for r in reports[1:3])
    for r in reports:
        assert (r.family, r.activation, r.norm) == (model_type, activation, norm)
        assert r.form == (PRE_LN if norm == "pre" else POST_LN)
        assert r.note is None  # the real configs' normalize_before agrees with the class


def test_seq2seq_norm_per_family():
    """The placement each modeling file hard-codes."""
    norms = {t: {p.norm for p in FAMILIES[t].parts} for t in SEQ2SEQ}
    assert norms == {
        "bart": {"post"},
        "marian": {"post"},
        "mbart": {"pre"},
        "pegasus": {"pre"},
        "whisper": {"pre"},
    }
    assert [p.stack for p in FAMILIES["bart"].parts] == ["encoder", "decoder"]


@pytest.mark.parametrize("model_type", ["bart", "marian", "mbart", "pegasus", "whisper"])
def test_seq2seq_default_activation_is_gelu(tmp_path, model_type):
    rng = np.random.default_rng(7)
    path = save(tmp_path / model_type, *seq2seq(rng, model_type, activation_function=None))
    info = describe_checkpoint(path)
    assert [(p.stack, p.hidden_act, p.activation) for p in info.parts] == [
        ("encoder", "gelu", "gelu"),
        ("decoder", "gelu", "gelu"),
    ]


def test_seq2seq_ignored_normalize_before(tmp_path):
    rng = np.random.default_rng(8)
    path = save(tmp_path / "b", *seq2seq(rng, "bart", normalize_before=True))
    info = describe_checkpoint(path)
    for part in info.parts:
        assert part.norm == "post"
        assert "normalize_before=true" in part.note and "after the FFN" in part.note
    path = save(tmp_path / "p", *seq2seq(rng, "pegasus", normalize_before=False))
    assert "before the FFN" in describe_checkpoint(path).parts[0].note


def test_seq2seq_each_stack_reads_its_own_keys(tmp_path):
    rng = np.random.default_rng(9)
    # decoder_ffn_dim wrong: the decoder blocks' shapes contradict it.
    with pytest.raises(
        CheckpointError, match=r"decoder.layers.0.fc1.weight has shape \(11, 4\), expected \(9, 4\)"
    ):
        describe_checkpoint(save(tmp_path / "m", *seq2seq(rng, "bart", decoder_ffn_dim=9)))
    # encoder_layers wrong: the encoder stack has two layers.
    with pytest.raises(CheckpointError, match="encoder_layers=3"):
        describe_checkpoint(save(tmp_path / "l", *seq2seq(rng, "marian", encoder_layers=3)))
    # A layer whose fc2 is missing.
    tensors, config = seq2seq(rng, "whisper")
    del tensors["model.decoder.layers.1.fc2.weight"]
    with pytest.raises(
        CheckpointError, match=r"no model.decoder.layers.1.fc2.weight \(the down projection\)"
    ):
        describe_checkpoint(save(tmp_path / "f", tensors, config))


def test_decoder_only_checkpoint(tmp_path):
    """BartForCausalLM keeps model.decoder.layers.{i} only."""
    rng = np.random.default_rng(10)
    tensors, config = seq2seq(rng, "bart", stacks=("decoder",), encoder_layers=None)
    reports = scan(save(tmp_path / "b", tensors, config))
    check(
        reports,
        [
            ("model.decoder.layers.0", "decoder", 0, 11, "not_absorbable"),
            ("model.decoder.layers.1", "decoder", 1, 11, "absorbable"),
        ],
    )


def test_decoder_only_checkpoint_with_encoder_layers(tmp_path):
    rng = np.random.default_rng(11)
    tensors, config = seq2seq(rng, "bart", stacks=("decoder",))
    assert len(scan(save(tmp_path / "b", tensors, config))) == 2
