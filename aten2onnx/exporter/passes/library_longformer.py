"""transformers' Longformer (checked against transformers 5.24) captured through equivalents (see libraries.py).

Longformer reads two things from its inputs' data that torch.export cannot trace: whether any token attends
globally (`.item()` of a mask, then a Python branch), and how many global tokens the row with most has (a size,
then `len()` of an index tensor of that size). Its question answering and multiple choice heads find where
global attention goes from the separator tokens' positions, a count read from data. The sequence is also padded
to a multiple of the attention window only `if padding_len > 0`, a branch on the dynamic length, and the
sliding-window products size their chunks with `torch.div` of sizes, a tensor read back as a size.

The equivalents compute what the library's code computes, without the branches:
- the padding is always applied (by 0 where the length is already a multiple);
- the global tokens are found once per forward: each row's global positions in order, padded to the most any row
  has (a size read from data, 0 when there is no global token), and which of them are real;
- self-attention always takes the global path. With no global token its global parts are empty and it computes
  what the local path computes;
- the sliding-window products chunk with `unfold` (the library's own ONNX branch) and integer division.

Scatters by index lists become gathers and a scatter by position, with the same values. A call asking for attention
probabilities (`output_attentions`) is refused with advice: its global attentions exist only when a global token
does."""

from __future__ import annotations

import inspect
import math
import sys
from typing import Any, Callable, NamedTuple

import torch
from torch import nn

from aten2onnx.errors import LibraryRefusal

MODULE = "transformers.models.longformer.modeling_longformer"


class GlobalTokens(NamedTuple):
    """Each row's global positions in order, padded to `most` (the most any row has), and which are real."""
    positions: torch.Tensor  # (batch, most) int64
    real: torch.Tensor  # (batch, most) bool
    most: int | torch.SymInt


def global_tokens(is_index_global_attn: torch.Tensor) -> GlobalTokens:
    """The global tokens of a (batch, seq) mask, found once for every layer."""
    count = is_index_global_attn.long().sum(dim=1)
    most = count.max().item()
    torch._check(most >= 0)
    torch._check(most <= is_index_global_attn.shape[1])
    # a stable sort puts each row's global positions first, in order
    order = torch.argsort((~is_index_global_attn).to(torch.uint8), dim=1, stable=True)
    return GlobalTokens(order[:, :most], torch.arange(most, device=count.device) < count[:, None], most)


def pad_to_window_size(self: Any, input_ids: torch.Tensor | None, attention_mask: torch.Tensor,
                       token_type_ids: torch.Tensor, position_ids: torch.Tensor | None,
                       inputs_embeds: torch.Tensor | None, pad_token_id: int) -> tuple[Any, ...]:
    """LongformerModel._pad_to_window_size, padding by an integer count that may be 0."""
    window = self.config.attention_window
    window = window if isinstance(window, int) else max(window)
    batch_size, seq_len = (input_ids.shape if input_ids is not None else inputs_embeds.shape)[:2]
    torch._check(attention_mask.shape[-1] == seq_len)  # as eager's padding needs it: one length for all
    padding_len = (seq_len + window - 1) // window * window - seq_len
    if input_ids is not None:
        input_ids = nn.functional.pad(input_ids, (0, padding_len), value=pad_token_id)
    if position_ids is not None:
        position_ids = nn.functional.pad(position_ids, (0, padding_len), value=pad_token_id)
    if inputs_embeds is not None:
        padding = inputs_embeds.new_full((batch_size, padding_len), self.config.pad_token_id, dtype=torch.long)
        inputs_embeds = torch.cat([inputs_embeds, self.embeddings(padding)], dim=-2)
    attention_mask = nn.functional.pad(attention_mask, (0, padding_len), value=0)
    token_type_ids = nn.functional.pad(token_type_ids, (0, padding_len), value=0)
    return padding_len, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds


def encoder_forward(self: Any, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                    padding_len: Any = 0, output_attentions: bool = False, output_hidden_states: bool = False,
                    return_dict: bool = True) -> Any:
    """LongformerEncoder.forward with the global tokens found once and handed to every layer in place of
    the library's `is_global_attn` flag."""
    if output_attentions:
        raise LibraryRefusal(
            "Longformer with output_attentions=True returns global attentions only when some token attends "
            "globally, which it reads from the input's data; an exported model's outputs cannot come and go "
            "with the data. Export it with output_attentions=False (the default; config.output_attentions=False "
            "if the config sets it)")
    is_index_masked = attention_mask < 0
    is_index_global_attn = attention_mask > 0
    found = global_tokens(is_index_global_attn)
    all_hidden_states: tuple[torch.Tensor, ...] | None = () if output_hidden_states else None
    for layer in self.layer:
        if all_hidden_states is not None:
            all_hidden_states += (hidden_states,)
        hidden_states = layer(hidden_states, attention_mask=attention_mask, is_index_masked=is_index_masked,
                              is_index_global_attn=is_index_global_attn, is_global_attn=found,
                              output_attentions=False)[0]
    if all_hidden_states is not None:
        all_hidden_states = tuple(h[:, : h.shape[1] - padding_len] for h in all_hidden_states + (hidden_states,))
    hidden_states = hidden_states[:, : hidden_states.shape[1] - padding_len]
    if not return_dict:
        return tuple(v for v in (hidden_states, all_hidden_states) if v is not None)
    output = sys.modules[MODULE].LongformerBaseModelOutput
    return output(last_hidden_state=hidden_states, hidden_states=all_hidden_states)


def _chunks(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    """(rows, length, dim) as overlapping chunks (rows, count, size, dim), a chunk every `step`."""
    return x.unfold(1, size, step).transpose(2, 3)


def sliding_chunks_query_key_matmul(self: Any, query: torch.Tensor, key: torch.Tensor,
                                    window_overlap: int) -> torch.Tensor:
    """LongformerSelfAttention._sliding_chunks_query_key_matmul: each query's scores against the keys within
    window_overlap of it, (batch, seq, heads, 2 * window_overlap + 1)."""
    batch_size, seq_len, num_heads, head_dim = query.size()
    w = window_overlap
    query = _chunks(query.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim), 2 * w, w)
    key = _chunks(key.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim), 2 * w, w)
    chunked = torch.einsum("bcxd,bcyd->bcxy", (query, key))
    chunked = self._pad_and_transpose_last_two_dims(chunked, padding=(0, 0, 0, 1))
    scores = chunked.new_zeros((batch_size * num_heads, seq_len // w, w, 2 * w + 1))
    scores[:, :-1, :, w:] = chunked[:, :, :w, : w + 1]
    scores[:, -1, :, w:] = chunked[:, -1, w:, : w + 1]
    scores[:, 1:, :, :w] = chunked[:, :, -(w + 1): -1, w + 1:]
    scores[:, 0, 1:w, 1:w] = chunked[:, 0, : w - 1, 1 - w:]
    scores = scores.view(batch_size, num_heads, seq_len, 2 * w + 1).transpose(2, 1)
    self._mask_invalid_locations(scores, w)
    return scores


def sliding_chunks_matmul_attn_probs_value(self: Any, attn_probs: torch.Tensor, value: torch.Tensor,
                                           window_overlap: int) -> torch.Tensor:
    """LongformerSelfAttention._sliding_chunks_matmul_attn_probs_value: the windowed probabilities times the
    values, (batch, seq, heads, head_dim)."""
    batch_size, seq_len, num_heads, head_dim = value.size()
    w = window_overlap
    probs = attn_probs.transpose(1, 2).reshape(batch_size * num_heads, seq_len // w, w, 2 * w + 1)
    value = value.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
    padded = nn.functional.pad(value, (0, 0, w, w), value=-1)
    context = torch.einsum("bcwd,bcdh->bcwh", (self._pad_and_diagonalize(probs), _chunks(padded, 3 * w, w)))
    return context.view(batch_size, num_heads, seq_len, head_dim).transpose(1, 2)


def _of_global(x: torch.Tensor, found: GlobalTokens) -> torch.Tensor:
    """x (batch, seq, ...) at each row's global positions (batch, most, ...), zeros where not real."""
    index = found.positions.view(*found.positions.shape, *(1,) * (x.dim() - 2)).expand(-1, -1, *x.shape[2:])
    real = found.real.view(*found.real.shape, *(1,) * (x.dim() - 2))
    return x.gather(1, index).masked_fill(~real, 0)


def self_attention_forward(original: Callable[..., Any]) -> Callable[..., Any]:
    """LongformerSelfAttention.forward for the global tokens `encoder_forward` found: the library's global
    path whatever their count."""
    def forward(self: Any, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None,
                is_index_masked: torch.Tensor | None = None, is_index_global_attn: torch.Tensor | None = None,
                is_global_attn: Any = None, output_attentions: bool = False) -> tuple[torch.Tensor, ...]:
        if not isinstance(is_global_attn, GlobalTokens):  # (encoder_forward's calls only: no attentions asked)
            return original(self, hidden_states, attention_mask, is_index_masked, is_index_global_attn,
                            is_global_attn, output_attentions)
        found, most = is_global_attn, is_global_attn.most
        heads, head_dim, w = self.num_heads, self.head_dim, self.one_sided_attn_window_size
        hidden_states = hidden_states.transpose(0, 1)
        seq_len, batch_size, embed_dim = hidden_states.size()
        query = (self.query(hidden_states) / math.sqrt(head_dim)).view(seq_len, batch_size, heads, head_dim)
        query = query.transpose(0, 1)
        key = self.key(hidden_states).view(seq_len, batch_size, heads, head_dim).transpose(0, 1)
        value = self.value(hidden_states).view(seq_len, batch_size, heads, head_dim).transpose(0, 1)
        lowest = torch.finfo(query.dtype).min

        # each token against its window, then against every global token (batch, seq, heads, most + window)
        scores = self._sliding_chunks_query_key_matmul(query, key, w)
        remove = (attention_mask != 0)[:, :, None, None]
        float_mask = remove.type_as(query).masked_fill(remove, lowest)
        scores = scores + self._sliding_chunks_query_key_matmul(float_mask.new_ones(size=float_mask.size()),
                                                                float_mask, w)
        against_global = torch.matmul(query.transpose(1, 2), _of_global(key, found).permute(0, 2, 3, 1))
        against_global = against_global.transpose(1, 2).masked_fill(~found.real[:, None, None, :], lowest)
        scores = torch.cat((against_global, scores), dim=-1)
        probs = nn.functional.softmax(scores, dim=-1, dtype=torch.float32)
        probs = probs.masked_fill(is_index_masked[:, :, None, None], 0.0).type_as(scores)
        probs = nn.functional.dropout(probs, p=self.dropout, training=self.training)
        from_global = torch.matmul(probs.narrow(-1, 0, most).transpose(1, 2),
                                   _of_global(value, found).transpose(1, 2)).transpose(1, 2)
        windowed = probs.narrow(-1, most, probs.size(-1) - most).contiguous()
        out = from_global + self._sliding_chunks_matmul_attn_probs_value(windowed, value, w)
        out = out.reshape(batch_size, seq_len, embed_dim)

        # the global tokens' own outputs attend to every token, through the global projections
        global_query = self.query_global(_of_global(hidden_states.transpose(0, 1), found).transpose(0, 1))
        global_query = (global_query / math.sqrt(head_dim)).contiguous().view(most, batch_size * heads, head_dim)
        global_key = self.key_global(hidden_states).contiguous().view(-1, batch_size * heads, head_dim)
        global_value = self.value_global(hidden_states).contiguous().view(-1, batch_size * heads, head_dim)
        global_scores = torch.bmm(global_query.transpose(0, 1), global_key.transpose(0, 1).transpose(1, 2))
        global_scores = global_scores.view(batch_size, heads, most, seq_len)
        global_scores = global_scores.masked_fill(~found.real[:, None, :, None], lowest)
        global_scores = global_scores.masked_fill(is_index_masked[:, None, None, :], lowest)
        global_probs = nn.functional.softmax(global_scores.view(batch_size * heads, most, seq_len), dim=-1,
                                             dtype=torch.float32).type_as(global_scores)
        global_probs = nn.functional.dropout(global_probs, p=self.dropout, training=self.training)
        global_out = torch.bmm(global_probs, global_value.transpose(0, 1)).view(batch_size, heads, most, head_dim)
        global_out = global_out.transpose(1, 2).reshape(batch_size, most, embed_dim)
        index = found.positions[:, :, None].expand(-1, -1, embed_dim)
        global_out = torch.where(found.real[:, :, None], global_out, out.gather(1, index))
        return (out.scatter(1, index, global_out),)
    return forward


def question_end_index(input_ids: torch.Tensor, sep_token_id: int) -> torch.Tensor:
    """_get_question_end_index: each row's first separator token (question answering and multiple choice put
    global attention before or after it). The library takes the positions of every separator (a count read
    from data) and asserts three per row; the first is the argmax of where they are (argmax takes the first
    of equal values). For an input the library refuses (not three separators in a row) the export still
    gives each row's first separator, or 0 for a row without one."""
    return (input_ids == sep_token_id).to(torch.int32).argmax(dim=1)


def equivalents() -> list[tuple[Any, str, Callable[..., Any]]]:
    """(owner, attribute, equivalent) for Longformer, where its module is loaded and its methods take the
    arguments checked against (else none: capture then stops where the library reads data, as before)."""
    module = sys.modules.get(MODULE)
    if module is None:
        return []
    attention, encoder, model = module.LongformerSelfAttention, module.LongformerEncoder, module.LongformerModel
    expected = {
        attention.forward: ["self", "hidden_states", "attention_mask", "is_index_masked", "is_index_global_attn",
                            "is_global_attn", "output_attentions"],
        encoder.forward: ["self", "hidden_states", "attention_mask", "padding_len", "output_attentions",
                          "output_hidden_states", "return_dict"],
        model._pad_to_window_size: ["self", "input_ids", "attention_mask", "token_type_ids", "position_ids",
                                    "inputs_embeds", "pad_token_id"],
        attention._sliding_chunks_query_key_matmul: ["self", "query", "key", "window_overlap"],
        attention._sliding_chunks_matmul_attn_probs_value: ["self", "attn_probs", "value", "window_overlap"],
        module._get_question_end_index: ["input_ids", "sep_token_id"],
    }
    if any(list(inspect.signature(fn).parameters) != names for fn, names in expected.items()):
        return []
    return [
        (model, "_pad_to_window_size", pad_to_window_size),
        (encoder, "forward", encoder_forward),
        (attention, "forward", self_attention_forward(attention.forward)),
        (attention, "_sliding_chunks_query_key_matmul", sliding_chunks_query_key_matmul),
        (attention, "_sliding_chunks_matmul_attn_probs_value", sliding_chunks_matmul_attn_probs_value),
        (module, "_get_question_end_index", question_end_index),
    ]
