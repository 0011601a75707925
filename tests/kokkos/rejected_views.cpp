// Calls of weave::execute that must not compile. Built once per case
// (WEAVE_REJECTED_CASE = 1, 2, ...) by tests that expect the build to fail
// with the static_assert message of that case; case 0 is the valid call, so
// a failure there would mean the other cases prove nothing.
#include <Kokkos_Core.hpp>

#include <weave/weave_kokkos.hpp>

void call(const weave::KokkosPlan& plan) {
  using Host = Kokkos::HostSpace;
  Kokkos::View<double**, Kokkos::LayoutLeft, Host> a("A", 2, 2), b("B", 2, 2), c("C", 2, 2);
  Kokkos::View<double*, Host> bias("bias", 2);
  const Kokkos::DefaultHostExecutionSpace space;
#if WEAVE_REJECTED_CASE == 0
  weave::execute(plan, 1.0, a, b, 0.0, c, bias, space);
#elif WEAVE_REJECTED_CASE == 1  // a rank-1 matrix
  Kokkos::View<double*, Host> a1("A", 4);
  weave::execute(plan, 1.0, a1, b, 0.0, c, space);
#elif WEAVE_REJECTED_CASE == 2  // a strided layout
  Kokkos::View<double**, Kokkos::LayoutStride, Host> strided = a;
  weave::execute(plan, 1.0, strided, b, 0.0, c, space);
#elif WEAVE_REJECTED_CASE == 3  // integers
  Kokkos::View<int**, Kokkos::LayoutLeft, Host> integers("A", 2, 2);
  weave::execute(plan, 1.0, integers, b, 0.0, c, space);
#elif WEAVE_REJECTED_CASE == 4  // a read-only C
  Kokkos::View<const double**, Kokkos::LayoutLeft, Host> c_const = c;
  weave::execute(plan, 1.0, a, b, 0.0, c_const, space);
#elif WEAVE_REJECTED_CASE == 5  // a rank-2 bias
  weave::execute(plan, 1.0, a, b, 0.0, c, a, space);
#elif WEAVE_REJECTED_CASE == 6  // no execution space
  weave::execute(plan, 1.0, a, b, 0.0, c, bias, 0);
#endif
}

int main() { return 0; }
