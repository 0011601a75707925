// The test oracle: global matrices generated identically on every rank from
// a shared seed, each rank's block cut out of them by the test's own
// reading of the distribution, and the product computed in double precision
// on the whole matrices. Written against weave.h only.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace weave_test {

// A dense global matrix, column-major, of double or (for the complex
// types) std::complex<double>.
template <class V>
struct DenseOf {
  int64_t rows = 0, cols = 0;
  std::vector<V> v;
  DenseOf() = default;
  DenseOf(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), V(0)) {}
  V& operator()(int64_t i, int64_t j) { return v[static_cast<size_t>(i + j * rows)]; }
  const V& operator()(int64_t i, int64_t j) const { return v[static_cast<size_t>(i + j * rows)]; }
};
using Dense = DenseOf<double>;
using ComplexDense = DenseOf<std::complex<double>>;

// Uniform in [-1, 1): never zeros, so unwritten outputs cannot pass.
inline Dense random_dense(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  Dense d(rows, cols);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& x : d.v) x = u(rng);
  return d;
}

template <class V>
DenseOf<V> transpose(const DenseOf<V>& x) {
  DenseOf<V> t(x.cols, x.rows);
  for (int64_t j = 0; j < x.cols; ++j)
    for (int64_t i = 0; i < x.rows; ++i) t(j, i) = x(i, j);
  return t;
}

// The conjugate transpose (the transpose of a real-valued matrix).
inline ComplexDense conjugate_transpose(const ComplexDense& x) {
  ComplexDense t(x.cols, x.rows);
  for (int64_t j = 0; j < x.cols; ++j)
    for (int64_t i = 0; i < x.rows; ++i) t(j, i) = std::conj(x(i, j));
  return t;
}

// Reference result and the elementwise error bound that goes with it:
//   C = alpha * opA * opB + beta * C0 + bias (bias broadcast over rows)
//   bound(i,j) = (gamma + rounding) * (|alpha| (|opA| |opB|)(i,j) + |beta| |C0(i,j)| + |bias(j)|)
//                + underflow
// gamma covers the sums, done with unit roundoff `unit_roundoff` (float32
// for 16-bit types); rounding = `output_rounding` covers storing results in
// an output type narrower than the sums: its unit roundoff times the number
// of times a result is rounded into it; underflow = `output_underflow` is
// the absolute error of those roundings where a result is subnormal in the
// output type. Complex values: |.| is the modulus (the caller passes a unit
// roundoff that covers complex multiplication, see accumulation_roundoff).
template <class V>
struct ReferenceOf {
  DenseOf<V> c;
  Dense bound;
};
using Reference = ReferenceOf<double>;

// V from the matrices alone (bias may be nullptr, the scalars doubles).
template <class T>
struct Same {
  using type = T;
};

template <class V>
ReferenceOf<V> reference_product(const DenseOf<V>& op_a, const DenseOf<V>& op_b, const DenseOf<V>& c0,
                                 const std::vector<typename Same<V>::type>* bias, typename Same<V>::type alpha,
                                 typename Same<V>::type beta, double unit_roundoff,
                                 double output_rounding = 0.0, double output_underflow = 0.0) {
  const int64_t m = op_a.rows, n = op_b.cols, k = op_a.cols;
  ReferenceOf<V> r{DenseOf<V>(m, n), Dense(m, n)};
  // Forward error of a k-term dot product plus the scaling and two additions,
  // with a safety factor of 4 for the order in which backends sum.
  const double gamma = 4.0 * static_cast<double>(k + 3) * unit_roundoff + output_rounding;
  // op(A) transposed, so that both factors of a dot product are read in
  // order, and every |element| taken once: |a b| = |a| |b|, which for the
  // complex types saves a hypot per term (the sums, in the same order as
  // ever, are unchanged; the bounds may differ in their last bits).
  const DenseOf<V> a_t = transpose(op_a);
  Dense abs_a_t(k, m), abs_b(k, n);
  for (std::size_t q = 0; q < a_t.v.size(); ++q) abs_a_t.v[q] = std::abs(a_t.v[q]);
  for (std::size_t q = 0; q < op_b.v.size(); ++q) abs_b.v[q] = std::abs(op_b.v[q]);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      V sum = V(0);
      double magnitude = 0.0;
      if (k > 0) {  // (no offsets into empty matrices' storage)
        const V* a_row = a_t.v.data() + i * k;
        const V* b_col = op_b.v.data() + j * k;
        const double* abs_a_row = abs_a_t.v.data() + i * k;
        const double* abs_b_col = abs_b.v.data() + j * k;
        for (int64_t l = 0; l < k; ++l) {
          sum += a_row[l] * b_col[l];
          magnitude += abs_a_row[l] * abs_b_col[l];
        }
      }
      V value = alpha * sum;
      double scale = std::abs(alpha) * magnitude;
      if (beta != V(0)) {
        value += beta * c0(i, j);
        scale += std::abs(beta * c0(i, j));
      }
      if (bias) {
        value += (*bias)[static_cast<size_t>(j)];
        scale += std::abs((*bias)[static_cast<size_t>(j)]);
      }
      r.c(i, j) = value;
      r.bound(i, j) = gamma * scale + output_underflow + 4.0 * std::numeric_limits<double>::min();
    }
  return r;
}

// Splits n into `parts` counts following a pattern, all ranks alike.
enum class Shards { Balanced, Uneven, WithEmpty };
inline const char* shards_name(Shards s) {
  return s == Shards::Balanced ? "balanced" : s == Shards::Uneven ? "uneven" : "with-empty";
}
inline std::vector<int64_t> make_counts(int64_t n, int parts, Shards pattern) {
  std::vector<int64_t> counts(static_cast<size_t>(parts), 0);
  if (parts == 0) return counts;
  if (pattern == Shards::Balanced) {
    for (int i = 0; i < parts; ++i) counts[i] = n / parts + (i < n % parts ? 1 : 0);
    return counts;
  }
  // Uneven: weights 1, 2, 3, ... ; WithEmpty: the first and (if >2 parts) the
  // third part own nothing.
  std::vector<int64_t> weight(static_cast<size_t>(parts));
  int64_t total = 0;
  for (int i = 0; i < parts; ++i) {
    weight[i] = (pattern == Shards::WithEmpty && parts > 1 && (i == 0 || i == 2)) ? 0 : i + 1;
    total += weight[i];
  }
  int64_t given = 0;
  for (int i = 0; i < parts; ++i) {
    counts[i] = total ? n * weight[i] / total : 0;
    given += counts[i];
  }
  for (int i = parts - 1; i >= 0 && given < n; --i)
    if (weight[i] > 0 || total == 0) {
      counts[i] += n - given;
      given = n;
    }
  return counts;
}

// A second, different pattern, for the other split dimension of a case.
inline Shards other_shards(Shards s) {
  return s == Shards::Balanced ? Shards::Balanced : s == Shards::Uneven ? Shards::WithEmpty : Shards::Uneven;
}

}  // namespace weave_test
