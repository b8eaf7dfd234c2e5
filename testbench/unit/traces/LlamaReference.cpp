#include "LlamaReference.h"

#include <cmath>
#include <stdexcept>

namespace tracetest {

using tpusim::traces::LlamaConfig;

namespace {

using Matrix = std::vector<double>;  // row-major [rows, cols]

const std::vector<double>& get(const Tensors& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("reference: no tensor " + name);
  return it->second;
}

std::string layerName(int64_t l, const char* what) {
  return "params['layers'][" + std::to_string(l) + "]['" + what + "']";
}

// rows x [K] times W [K, N].
Matrix matmul(const Matrix& x, int64_t rows, int64_t k, const Matrix& w, int64_t n) {
  Matrix y(static_cast<size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += x[r * k + i] * w[i * n + j];
      y[r * n + j] = acc;
    }
  return y;
}

Matrix rmsNorm(const Matrix& x, int64_t rows, int64_t d, const std::vector<double>& weight,
               double eps) {
  Matrix y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < d; ++i) ss += x[r * d + i] * x[r * d + i];
    double inv = 1.0 / std::sqrt(ss / double(d) + eps);
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * inv * weight[i];
  }
  return y;
}

// Rotates each head vector (the halves convention) of rows laid out
// [B, S, heads, hd] by its position s.
void rope(Matrix& x, int64_t batch, int64_t seq, int64_t heads, int64_t hd, double theta) {
  int64_t half = hd / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < heads; ++h) {
        double* v = &x[((b * seq + s) * heads + h) * hd];
        for (int64_t i = 0; i < half; ++i) {
          double angle = double(s) * std::pow(theta, -2.0 * double(i) / double(hd));
          double c = std::cos(angle), sn = std::sin(angle);
          double a = v[i], bb = v[i + half];
          v[i] = a * c - bb * sn;
          v[i + half] = bb * c + a * sn;
        }
      }
}

}  // namespace

ReferenceResult referencePrefill(const LlamaConfig& c, const Tensors& w,
                                 const std::vector<int64_t>& tokens, KvHeadMap map) {
  const int64_t B = c.batch, S = c.seq, D = c.dModel, H = c.nHeads, KV = c.nKvHeads,
                hd = c.headDim(), F = c.dFf, G = H / KV, rows = B * S;
  Matrix x(static_cast<size_t>(rows * D));
  if (c.layersOnly) {
    x = get(w, "x");
  } else {
    const auto& table = get(w, "params['embed']");
    for (int64_t r = 0; r < rows; ++r) {
      int64_t id = tokens.at(r);
      if (id < 0) id += c.vocab;  // NumPy-style negative index
      for (int64_t i = 0; i < D; ++i) x[r * D + i] = table.at(id * D + i);
    }
  }
  ReferenceResult result;
  for (int64_t l = 0; l < c.nLayers; ++l) {
    Matrix h = rmsNorm(x, rows, D, get(w, layerName(l, "attention_norm")), c.normEps);
    Matrix q = matmul(h, rows, D, get(w, layerName(l, "wq")), H * hd);
    Matrix k = matmul(h, rows, D, get(w, layerName(l, "wk")), KV * hd);
    Matrix v = matmul(h, rows, D, get(w, layerName(l, "wv")), KV * hd);
    rope(q, B, S, H, hd, c.ropeTheta);
    rope(k, B, S, KV, hd, c.ropeTheta);
    Matrix o(static_cast<size_t>(rows * H * hd), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t head = 0; head < H; ++head) {
        int64_t kvHead = map == KvHeadMap::Grouped ? head / G : head % KV;
        for (int64_t s = 0; s < S; ++s) {
          const double* qv = &q[((b * S + s) * H + head) * hd];
          std::vector<double> p(static_cast<size_t>(s + 1));
          double max = -INFINITY, sum = 0;
          for (int64_t t = 0; t <= s; ++t) {  // causal: keys up to the query's position
            const double* kv = &k[((b * S + t) * KV + kvHead) * hd];
            double dot = 0;
            for (int64_t i = 0; i < hd; ++i) dot += qv[i] * kv[i];
            p[t] = dot / std::sqrt(double(hd));
            max = std::max(max, p[t]);
          }
          for (double& e : p) sum += (e = std::exp(e - max));
          double* out = &o[((b * S + s) * H + head) * hd];
          for (int64_t t = 0; t <= s; ++t)
            for (int64_t i = 0; i < hd; ++i)
              out[i] += p[t] / sum * v[((b * S + t) * KV + kvHead) * hd + i];
        }
      }
    Matrix attn = matmul(o, rows, H * hd, get(w, layerName(l, "wo")), D);
    for (size_t i = 0; i < x.size(); ++i) x[i] += attn[i];

    h = rmsNorm(x, rows, D, get(w, layerName(l, "ffn_norm")), c.normEps);
    Matrix gate = matmul(h, rows, D, get(w, layerName(l, "w1")), F);
    Matrix up = matmul(h, rows, D, get(w, layerName(l, "w3")), F);
    for (size_t i = 0; i < gate.size(); ++i)
      gate[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];  // silu(gate) * up
    Matrix down = matmul(gate, rows, F, get(w, layerName(l, "w2")), D);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    result.k.push_back(std::move(k));
    result.v.push_back(std::move(v));
  }
  if (c.layersOnly) {
    result.out = std::move(x);
  } else {
    Matrix h = rmsNorm(x, rows, D, get(w, "params['norm']"), c.normEps);
    result.out = matmul(h, rows, D, get(w, "params['output']"), c.vocab);
  }
  return result;
}

}  // namespace tracetest
