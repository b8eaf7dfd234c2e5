// Decode attention: one new token's query per head against a long KV cache, as
// in LLM serving. The cache length of each sequence is a scalar-prefetch
// operand (SMEM), so one compiled kernel serves any length up to the cache's
// capacity: kv blocks past the length are neither copied (their index_map is
// clamped to the last valid block) nor computed (`when`), and positions past
// the length inside the last block are masked.
//
// Grouped-query attention: the q heads that share a kv head form a group, and
// q is laid out [batch, kv_heads, group, head_dim] (q head h * group + g; the
// same bytes as [batch, heads, head_dim]); group = 1 is multi-head attention.
// The group's queries are the rows of one MXU matmul against the kv head.
// The output, [batch, kv_heads, group, head_dim], is f32. Online softmax as in
// FlashAttention.h (OnlineSoftmax).
//
// Two cache layouts:
//  - contiguous: k, v [batch, kv_heads, max_len, head_dim] bf16, grid
//    (batch, kv_heads, max_len / block_k);
//  - paged (vLLM / JAX paged_attention): k_pages, v_pages [kv_heads, num_pages,
//    page_size, head_dim] bf16 and a page table page_indices [batch,
//    pages_per_sequence] s32 in SMEM (scalar prefetch) that the index_maps read;
//    grid (batch, kv_heads, pages_per_sequence), one page per grid step.
// Scalar-prefetch operands come first: lengths [batch] s32 (1 <= length <=
// capacity), then (paged) page_indices.
#pragma once

#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

struct DecodeAttentionParams {
  // Contiguous cache: kv positions per grid step, a multiple of 128 (or >=
  // max_len: one block). Block index arithmetic divides by it, so the code
  // generator needs a power of two (interpret mode takes any). Big steps
  // amortize the per-step work (v5e, 8192 positions: 512 -> 41%, 2048 -> 53%
  // of the HBM peak); 4096 needs more scalar registers than the code generator has.
  int64_t blockK = 2048;
  double smScale = 0;  // 0: 1 / sqrt(head_dim)
  int64_t vmemLimitBytes = 0;
};

struct DecodeShape {
  int64_t batch = 1, kvHeads = 1, group = 1, headDim = 128;
};

// Contiguous KV cache of capacity maxLen.
dsl::PallasCall decodeAttentionCall(const DecodeShape& shape, int64_t maxLen,
                                    const DecodeAttentionParams& params = {});
// Inputs in order: lengths, q, k, v.
std::vector<dsl::ShapeDtype> decodeAttentionInputs(const DecodeShape& shape, int64_t maxLen);

// Paged KV cache: numPages pages of pageSize positions per kv head; each
// sequence owns pagesPerSeq entries of the page table. pageSize: at most 128 or
// a multiple of 128 (and a power of two for the code generator).
struct PagedLayout {
  int64_t numPages = 1, pageSize = 128, pagesPerSeq = 1;
};
dsl::PallasCall pagedAttentionCall(const DecodeShape& shape, const PagedLayout& pages,
                                   const DecodeAttentionParams& params = {});
// Inputs in order: lengths, page_indices, q, k_pages, v_pages.
std::vector<dsl::ShapeDtype> pagedAttentionInputs(const DecodeShape& shape,
                                                  const PagedLayout& pages);

// Plain C++ references in double precision (arrays in the layouts above).
std::vector<double> decodeAttentionReference(const std::vector<int32_t>& lengths,
                                             const std::vector<double>& q,
                                             const std::vector<double>& k,
                                             const std::vector<double>& v, const DecodeShape& shape,
                                             int64_t maxLen, double smScale = 0);
std::vector<double> pagedAttentionReference(const std::vector<int32_t>& lengths,
                                            const std::vector<int32_t>& pageIndices,
                                            const std::vector<double>& q,
                                            const std::vector<double>& kPages,
                                            const std::vector<double>& vPages,
                                            const DecodeShape& shape, const PagedLayout& pages,
                                            double smScale = 0);

// Registry entries "decode_attention" and "paged_attention". Their inputs come
// with valid lengths (and a page table of distinct pages), not random words.
KernelEntry decodeAttentionEntry();
KernelEntry pagedAttentionEntry();

}  // namespace tpusim::kernels::lib
