// The oracle's error bound (support/oracle.hpp) against results rounded the
// way a correct backend rounds them: it must admit every correctly rounded
// result, and still reject one a unit in the last place further off.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/element_types.hpp"
#include "support/oracle.hpp"

namespace weave_test {
namespace {

// C = alpha * a * b (K = 1, beta = 0, no bias) stored in `t`, one rounding.
Reference one_product(double a, double b, double alpha, weave_dtype_t t) {
  Dense op_a(1, 1), op_b(1, 1), c0(1, 1);
  op_a(0, 0) = a;
  op_b(0, 0) = b;
  return reference_product(op_a, op_b, c0, nullptr, alpha, 0.0, accumulation_roundoff(t, false), output_roundoff(t),
                           output_underflow(t));
}

// A float16 result below the smallest normal float16 (2^-14) is a multiple
// of 2^-24: rounding it is off by up to 2^-25 whatever its size. (A GEMM-AR
// case with such a result once failed against a bound without this term.)
TEST(OracleBound, AdmitsCorrectlyRoundedSubnormalFloat16) {
  const Reference r = one_product(-0.0625, 7.8125e-05, 1.30892, WEAVE_FLOAT16);
  const double exact = r.c(0, 0);
  ASSERT_LT(std::fabs(exact), 0x1p-14);  // subnormal in float16
  const double stored = round_to(WEAVE_FLOAT16, exact);
  EXPECT_LE(std::fabs(stored - exact), r.bound(0, 0));
  // One float16 subnormal step further off is still an error.
  const double step = 0x1p-24;
  EXPECT_GT(std::fabs(stored + step - exact), r.bound(0, 0));
  EXPECT_GT(std::fabs(stored - step - exact), r.bound(0, 0));
}

TEST(OracleBound, AdmitsCorrectlyRoundedNormalSixteenBitResults) {
  for (const weave_dtype_t t : {WEAVE_FLOAT16, WEAVE_BFLOAT16}) {
    const Reference r = one_product(0.3, 1.7, 1.1, t);
    const double exact = r.c(0, 0);
    EXPECT_LE(std::fabs(round_to(t, exact) - exact), r.bound(0, 0)) << "type " << static_cast<int>(t);
  }
}

}  // namespace
}  // namespace weave_test
