"""lathe synth, families (issue 47 item 3): a kept module's family from what its forward ran.

The evidence is what the trial recorded in the sandbox (lathe_synth_trial.py): `ops`, the aten
compute ops (base names, as lathe_ops.py records them for `task show`), and `layers`, the class
names (with their bases) of the modules it ran. The ops decide where they are distinctive
(convolution, a loss, an embedding, a norm, a pool); the class names where the CPU's
decompositions hide them (torch.nn's LSTM runs addmm, sigmoid and tanh; MultiheadAttention
bmm and softmax; CrossEntropyLoss on float targets log_softmax and sum). The first family whose
rule matches, in FAMILIES' order (the heaviest part of a block names it: a conv-BN-ReLU block is
a convolution), else `other` (data movement only: pixel shuffle, upsampling, a flip, padding,
Fold/Unfold's im2col and col2im).
"""
import re


FAMILIES = ("attention", "recurrent", "convolution", "loss", "embedding", "normalization",
            "pooling", "linear", "activation", "reduction", "elementwise", "other")

OPS = {
    "attention": {"_native_multi_head_attention", "scaled_dot_product_attention",
                  "_scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                  "_transformer_encoder_layer_fwd", "_masked_softmax"},
    "recurrent": {"lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell",
                  "rnn_relu_cell", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell"},
    "convolution": {"convolution", "_convolution", "mkldnn_convolution",
                    "_conv_depthwise2d", "_slow_conv2d_forward", "slow_conv3d_forward",
                    "slow_conv_dilated2d", "slow_conv_dilated3d", "slow_conv_transpose2d",
                    "slow_conv_transpose3d", "thnn_conv2d", "_mkldnn_convolution"},
    "loss": {"binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "nll_loss",
             "nll_loss2d", "nll_loss_nd", "cross_entropy_loss", "ctc_loss", "_ctc_loss"},
    "embedding": {"embedding", "_embedding_bag", "embedding_bag", "_embedding_bag_forward_only",
                  "embedding_renorm"},
    "normalization": {"native_batch_norm", "_native_batch_norm_legit", "batch_norm",
                      "_batch_norm_impl_index", "native_layer_norm", "layer_norm",
                      "native_group_norm", "group_norm", "instance_norm", "renorm"},
    "linear": {"addmm", "mm", "bmm", "baddbmm", "matmul", "linear", "_trilinear", "bilinear",
               "addmv", "mv", "dot", "vdot", "einsum", "addbmm", "_addmm_activation"},
    "activation": {"relu", "relu6", "gelu", "sigmoid", "tanh", "silu", "elu", "leaky_relu",
                   "hardtanh", "softplus", "_softmax", "softmax", "_log_softmax", "log_softmax",
                   "mish", "hardswish", "hardsigmoid", "prelu", "_prelu_kernel",
                   "rrelu_with_noise", "glu", "threshold", "celu", "selu", "softshrink",
                   "hardshrink", "log_sigmoid_forward", "log_sigmoid", "logit"},
    "reduction": {"sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm",
                  "var", "std", "var_mean", "std_mean", "prod", "logsumexp", "cumsum", "cumprod",
                  "argmax", "argmin", "any", "all", "median", "nansum", "count_nonzero",
                  "aminmax", "frobenius_norm", "nuclear_norm", "_cdist_forward"},
    "elementwise": {"add", "sub", "rsub", "mul", "div", "pow", "exp", "log", "sqrt", "rsqrt",
                    "abs", "neg", "clamp", "clamp_min", "clamp_max", "where", "sign", "sgn",
                    "reciprocal", "sin", "cos", "tan", "floor", "ceil", "round", "trunc", "frac",
                    "remainder", "fmod", "minimum", "maximum", "eq", "ne", "gt", "lt", "ge", "le",
                    "logical_and", "logical_or", "logical_not", "logical_xor", "addcmul",
                    "addcdiv", "lerp", "xlogy", "log1p", "expm1", "exp2", "log2", "log10", "erf",
                    "erfc", "erfinv", "square", "atan", "atan2", "asin", "acos", "sinh", "cosh",
                    "hypot", "masked_fill", "floor_divide", "bitwise_and", "bitwise_or",
                    "bitwise_not", "bitwise_xor", "isnan", "isinf", "nan_to_num", "heaviside"},
}
# Class names (a module's class and its bases, torch.nn's as named there) that say a family the
# CPU's ops do not show.
LAYERS = {
    "attention": {"MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
                  "TransformerEncoderLayer", "TransformerDecoderLayer"},
    "recurrent": {"RNNBase", "RNNCellBase", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"},
    "loss": {"_Loss", "_WeightedLoss"},
    "normalization": {"_NormBase", "_BatchNorm", "_InstanceNorm", "LayerNorm", "GroupNorm",
                      "LocalResponseNorm", "CrossMapLRN2d"},
}


# A class named as a norm (torchvision's FrozenBatchNorm2d runs mul, add and rsqrt).
NORM_NAME = re.compile(r"(Batch|Layer|Group|Instance|RMS)Norm")


def family(ops, layers):
    """The family of a module that ran `ops` (aten base names) in modules of class `layers`."""
    names = {o[:-1] if o.endswith("_") and not o.endswith("__") else o for o in ops or []}
    classes = set(layers or [])
    for fam in FAMILIES[:-1]:
        if names & OPS.get(fam, set()) or classes & LAYERS.get(fam, set()):
            return fam
        if fam == "attention" and names & {"_softmax", "softmax"} and names & {"bmm", "baddbmm", "matmul"}:
            return fam  # softmax between batched matmuls: attention spelled out
        if fam == "recurrent" and {"sigmoid", "tanh"} <= names and names & {"unsafe_split", "unsafe_chunk"}:
            return fam  # gates split from one matmul, sigmoid and tanh: an LSTM/GRU cell
        if fam == "loss" and any(n.endswith(("_loss", "_loss_forward")) for n in names):
            return fam  # nll_loss_forward, multilabel_margin_loss_forward: a loss on class indices
        if fam == "convolution" and any(n.startswith(("conv", "slow_conv", "cudnn_conv")) for n in names):
            return fam
        if fam == "normalization" and any(NORM_NAME.search(c) for c in classes):
            return fam
        if fam == "pooling" and any("pool" in n for n in names):
            return fam
    return "other"
