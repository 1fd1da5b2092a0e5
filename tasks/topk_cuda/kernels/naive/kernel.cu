// Naive top-k on the GPU: X[R,C] fp32 -> V[R,K] fp32 (the K largest of each row) and I[R,K] int64
// (their columns).
//
// One thread per row. Pass j walks the whole row and picks the largest element that comes after
// the one pass j-1 picked in the order (value descending, column ascending); ties in value are
// thus taken in column order, and exactly K distinct columns come out for any input without NaN
// (the task's contract), ties at the K-th value included. Every pass reloads the row from global
// memory (K*C loads per row, served by L1/L2 at best), and a warp's 32 threads read 32 different
// rows. This is where the lineage starts; it handles any R and 1 <= K <= C.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_matrix(const DLTensor& t, uint8_t code, uint8_t bits) {
  if (t.ndim != 2 || t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

__global__ void topk_naive(const float* __restrict__ x, float* __restrict__ vals,
                           int64_t* __restrict__ idx, int R, int C, int K) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float* row = x + static_cast<size_t>(r) * C;
  float prev_v = 0.0f;
  int prev_c = -1;  // nothing picked yet
  for (int j = 0; j < K; ++j) {
    int best_c = -1;
    float best_v = 0.0f;
    for (int c = 0; c < C; ++c) {
      const float v = row[c];
      const bool after = prev_c < 0 || v < prev_v || (v == prev_v && c > prev_c);
      if (after && (best_c < 0 || v > best_v)) {  // strict: the lowest column wins a tie
        best_c = c;
        best_v = v;
      }
    }
    // j < K <= C leaves C - j >= 1 elements after the previous pick: best_c >= 0.
    vals[static_cast<size_t>(r) * K + j] = best_v;
    idx[static_cast<size_t>(r) * K + j] = best_c;
    prev_v = best_v;
    prev_c = best_c;
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 2) {
    set_error(args, "topk_cuda: expects input X and outputs V, I");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& V = args->outputs[0];
  const DLTensor& I = args->outputs[1];
  if (!is_matrix(X, kDLFloat, 32) || !is_matrix(V, kDLFloat, 32) || !is_matrix(I, kDLInt, 64)) {
    set_error(args, "topk_cuda: X and V must be contiguous 2-D float32, I 2-D int64");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1], K = V.shape[1];
  if (V.shape[0] != R || I.shape[0] != R || I.shape[1] != K || K > C) {
    set_error(args, "topk_cuda: shapes disagree (X[R,C], V[R,K], I[R,K], K <= C)");
    return 1;
  }
  if (R > INT32_MAX || C > INT32_MAX) {
    set_error(args, "topk_cuda: shape too large for this kernel's 32-bit indices");
    return 1;
  }
  if (R == 0 || K == 0) return 0;
  const int threads = 128;
  topk_naive<<<static_cast<unsigned>((R + threads - 1) / threads), threads, 0,
               static_cast<cudaStream_t>(args->stream)>>>(data_of<const float>(X), data_of<float>(V),
                                                          data_of<int64_t>(I), static_cast<int>(R),
                                                          static_cast<int>(C), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "topk_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
